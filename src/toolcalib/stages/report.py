"""Stage: the self-contained HTML report and its markdown summary."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from toolcalib.metrics.triples import TRIPLE_SCHEMA
from toolcalib.report import build_report
from toolcalib.stages import log


def run(metrics_dir: str, out_dir: str, validation: str | None = None) -> None:
    metrics = Path(metrics_dir)
    triples = pl.read_csv(metrics / "triples.csv", schema_overrides=TRIPLE_SCHEMA)
    confusion = pl.read_csv(metrics / "confusion.csv")
    per_case = pl.read_parquet(metrics / "per_case.parquet")
    shift = pl.read_csv(metrics / "shift.csv", infer_schema_length=None)
    checks = pl.read_csv(validation) if validation else None
    path = build_report(triples, confusion, per_case, shift=shift if shift.height else None,
                        validation=checks, out_dir=out_dir)
    log(f"report of {triples.height} triples -> {path}")
