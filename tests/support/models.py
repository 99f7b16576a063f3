"""Real converted models for tests: fetched and converted once, kept in pytest's cache folder
(or taken from the pipeline's results/models when a verified one is there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from toolcalib.models import GGUF_DTYPE, SOURCES, fetch_model, read_manifest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]


def converted_model(name: str, cache_root: Path, keep_gguf: bool = False) -> Path:
    """The converted folder of `SOURCES[name]` (or, `keep_gguf`, its GGUF form): a matching
    pipeline output, else a cached one, else a fresh one in `cache_root`."""
    source = SOURCES[name]
    dtype = GGUF_DTYPE if keep_gguf else source.dtype
    cached = cache_root / (f"{name}-gguf" if keep_gguf else name)

    def matches(folder: Path) -> bool:
        try:
            manifest = read_manifest(folder)
        except (FileNotFoundError, ValueError):
            return False
        return manifest.gguf_sha256 == source.sha256 and manifest.dtype == dtype

    built = sorted((ROOT / "results" / "models").glob("*/"))
    for folder in [*built, cached]:
        if matches(folder):
            return folder
    shutil.rmtree(cached, ignore_errors=True)
    return fetch_model(source, cached, keep_gguf)
