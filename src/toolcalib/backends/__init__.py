"""Backend registry: a backend is one module (or a package's `backend` module) exposing
`make(spec) -> Backend`."""

from __future__ import annotations

from collections.abc import Callable

from toolcalib.backends.base import Backend
from toolcalib.config import ModelSpec, StrictModel, model_options
from toolcalib.registry import Registry

BACKENDS: Registry[Callable[[ModelSpec], Backend]] = Registry("backend", {
    "policy": "toolcalib.backends.policy:make", "openai": "toolcalib.backends.openai:make",
    "replay": "toolcalib.backends.replay:make",
    "transformers": "toolcalib.backends.hf.backend:make",
    "llamacpp": "toolcalib.backends.llamacpp:make"})
"""Backend name -> its `make` (imported lazily, so optional dependencies stay optional); adding
a backend is its module, its options model and one entry here and one in `OPTIONS`."""
OPTIONS: Registry[type[StrictModel]] = Registry("backend", {
    "policy": "toolcalib.backends.policy:PolicyOptions",
    "openai": "toolcalib.backends.openai_options:OpenAIOptions",
    "replay": "toolcalib.backends.replay:ReplayOptions",
    "transformers": "toolcalib.backends.hf.options:Options",
    "llamacpp": "toolcalib.backends.llamacpp_options:LlamaCppOptions"})
"""Backend name -> its options model (`module:class`, importable without the backend's heavy
dependencies): the config schema of `models[*].options` is generated from it. An options model
may define `prepare_process()`: what the process needs before the backend's libraries load."""


def make_backend(spec: ModelSpec) -> Backend:
    where = f"model '{spec.name}'"
    options_model = OPTIONS.load(spec.backend, where)
    if hasattr(options_model, "prepare_process"):
        model_options(options_model, spec).prepare_process()
    return BACKENDS.load(spec.backend, where)(spec)
