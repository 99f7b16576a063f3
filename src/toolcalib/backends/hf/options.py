"""The `transformers` backend's options (see `hf`): a module of their own, so the config schema
is generated from them without importing torch or transformers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolcalib.backends.hf.kernels import prepare
from toolcalib.config import StrictModel


class Options(StrictModel):
    model_dir: str
    tools_mode: Literal["native", "prompt"] = "native"
    max_new_tokens: int = Field(default=256, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    dtype: Literal["auto", "bfloat16", "float32"] = "auto"
    linear: Literal["float", "int8"] = "float"
    kernels: Literal["native", "portable"] = "native"
    threads: int = Field(default=1, ge=1)
    keep_response: bool = False
    prefill_chunk: int = Field(default=256, ge=1)
    decode_rows: int = Field(default=8, ge=1)
    prefix_cache_tokens: int = Field(default=65536, ge=0)
    context_window: int | None = Field(default=None, ge=1)
    weight_major: bool = True
    draft_tokens: int = Field(default=16, ge=0)
    shared_prefix_dir: str | None = None

    def prepare_process(self) -> None:
        """Pin the kernel family before torch loads (see `hf.kernels`)."""
        prepare(self.kernels)
