"""The `llamacpp` backend's options (see `llamacpp`): a module of their own, so the config schema
is generated from them without importing llama_cpp or transformers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolcalib.config import StrictModel


class LlamaCppOptions(StrictModel):
    model_dir: str
    tools_mode: Literal["native", "prompt"] = "native"
    max_new_tokens: int = Field(default=256, ge=1)
    threads: int = Field(default=1, ge=1)
    n_batch: int = Field(default=512, ge=1)
    """Most prompt tokens per forward (llama.cpp's `n_batch` and `n_ubatch`): prompts are
    prefilled in chunks of at most this many tokens, cut at fixed positions."""
    flash_attn: bool = False
    context_window: int | None = Field(default=None, ge=1)
    keep_response: bool = False
