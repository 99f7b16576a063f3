"""Stage: triples, confusion matrices and per-case tables over every run."""

from collections.abc import Sequence

import polars as pl

from toolcalib.metrics.write import write_outputs
from toolcalib.stages import log


def run(actions: Sequence[str], runs: Sequence[str], out_dir: str) -> None:
    """`runs`: each run's per-case table (written by `evaluate`)."""
    action_frame = pl.concat([pl.read_parquet(p) for p in actions], how="vertical")
    write_outputs(out_dir, action_frame, [pl.read_parquet(p) for p in runs])
    log(f"aggregated {len(actions)} action tables and {len(runs)} runs -> {out_dir}")
