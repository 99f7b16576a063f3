"""The `llamacpp` backend's options (see `llamacpp`): a module of their own, so the config schema
is generated from them without importing llama_cpp or transformers."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from toolcalib.config import StrictModel


class LlamaCppOptions(StrictModel, frozen=True, kw_only=True):
    model_dir: str
    tools_mode: Literal["native", "prompt"] = "native"
    max_new_tokens: Annotated[int, Meta(ge=1)] = 256
    threads: Annotated[int, Meta(ge=1)] = 1
    n_batch: Annotated[int, Meta(ge=1)] = 512
    """Most prompt tokens per forward (llama.cpp's `n_batch` and `n_ubatch`): prompts are
    prefilled in chunks of at most this many tokens, cut at fixed positions."""
    flash_attn: bool = False
    context_window: Annotated[int, Meta(ge=1)] | None = None
    keep_response: bool = False
