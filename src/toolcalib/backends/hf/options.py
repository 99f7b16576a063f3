"""The `transformers` backend's options (see `hf`): a module of their own, so the config schema
is generated from them without importing torch or transformers."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from toolcalib.backends.hf.kernels import prepare
from toolcalib.config import StrictModel


class Options(StrictModel, frozen=True, kw_only=True):
    model_dir: str
    tools_mode: Literal["native", "prompt"] = "native"
    max_new_tokens: Annotated[int, Meta(ge=1)] = 256
    batch_size: Annotated[int, Meta(ge=1)] | None = None
    dtype: Literal["auto", "bfloat16", "float32"] = "auto"
    linear: Literal["float", "int8"] = "float"
    kernels: Literal["native", "portable"] = "native"
    threads: Annotated[int, Meta(ge=1)] = 1
    keep_response: bool = False
    prefill_chunk: Annotated[int, Meta(ge=1)] = 256
    decode_rows: Annotated[int, Meta(ge=1)] = 8
    prefix_cache_tokens: Annotated[int, Meta(ge=0)] = 65536
    context_window: Annotated[int, Meta(ge=1)] | None = None
    weight_major: bool = True
    draft_tokens: Annotated[int, Meta(ge=0)] = 16
    shared_prefix_dir: str | None = None

    def prepare_process(self) -> None:
        """Pin the kernel family before torch loads (see `hf.kernels`)."""
        prepare(self.kernels)
