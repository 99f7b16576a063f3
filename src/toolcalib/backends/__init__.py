"""Backend registry: a backend is one module exposing `make(spec) -> Backend`."""

from __future__ import annotations

import importlib

from toolcalib.backends.base import Backend
from toolcalib.config import ModelSpec, load_model

MODULES = {"policy": "toolcalib.backends.policy", "openai": "toolcalib.backends.openai",
           "replay": "toolcalib.backends.replay", "transformers": "toolcalib.backends.hf",
           "llamacpp": "toolcalib.backends.llamacpp"}
"""Backend name -> module; adding a backend is one module + one entry (imported lazily, so
optional dependencies stay optional)."""
OPTIONS = {"policy": "toolcalib.backends.policy:PolicyOptions",
           "openai": "toolcalib.backends.openai_options:OpenAIOptions",
           "replay": "toolcalib.backends.replay:ReplayOptions",
           "transformers": "toolcalib.backends.hf_options:Options",
           "llamacpp": "toolcalib.backends.llamacpp_options:LlamaCppOptions"}
"""Backend name -> its options model (`module:class`, importable without the backend's heavy
dependencies): the config schema of `models[*].options` is generated from it. An options model
may define `prepare_process()`: what the process needs before the backend's libraries load."""


def make_backend(spec: ModelSpec) -> Backend:
    if spec.backend not in MODULES:
        raise KeyError(f"model '{spec.name}': unknown backend '{spec.backend}' "
                       f"(known: {', '.join(sorted(MODULES))})")
    options_model = load_model(OPTIONS[spec.backend])
    if hasattr(options_model, "prepare_process"):
        options_model.model_validate(spec.options).prepare_process()
    return importlib.import_module(MODULES[spec.backend]).make(spec)
