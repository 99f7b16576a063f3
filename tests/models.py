"""Real converted models for tests: fetched and converted once, kept in pytest's cache folder
(or taken from the pipeline's results/models when a verified one is there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from toolcalib.models import SOURCES, fetch_model, read_manifest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]


def converted_model(name: str, cache_root: Path) -> Path:
    """The converted folder of `SOURCES[name]`: a matching pipeline output, else a cached
    conversion, else a fresh one into `cache_root / name`."""
    source = SOURCES[name]

    def matches(folder: Path) -> bool:
        try:
            manifest = read_manifest(folder)
        except (FileNotFoundError, ValueError):
            return False
        return manifest.gguf_sha256 == source.sha256 and manifest.dtype == source.dtype

    built = sorted((ROOT / "results" / "models").glob("*/"))
    for folder in [*built, cache_root / name]:
        if matches(folder):
            return folder
    shutil.rmtree(cache_root / name, ignore_errors=True)
    return fetch_model(source, cache_root / name)
