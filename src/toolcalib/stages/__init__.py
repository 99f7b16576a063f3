"""One module per pipeline stage, each with `run(**args)`: read the stage's inputs, run the
core, write its outputs atomically with rows in a stable order (same inputs, same bytes).

The CLI imports only the stage it runs, so each stage's code closure is exact (see codedeps).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from toolcalib.jsonio import atomic_write_bytes


def log(message: str) -> None:
    print(f"[toolcalib] {message}", file=sys.stderr, flush=True)


def write_parquet(path: str | Path, frame: pl.DataFrame) -> None:
    """Parquet written atomically (polars output is deterministic for equal frames)."""
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(tmp, compression="zstd", statistics=False)
    atomic_write_bytes(path, tmp.read_bytes())
    tmp.unlink()

