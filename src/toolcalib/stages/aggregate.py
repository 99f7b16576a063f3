"""Stage: triples, confusion matrices and per-case tables over every run."""

from collections.abc import Sequence

import polars as pl

from toolcalib.jsonio import read_records
from toolcalib.metrics.write import write_outputs
from toolcalib.records import Case
from toolcalib.stages import log


def run(actions: Sequence[str], scores: Sequence[str], cases: Sequence[str],
        out_dir: str) -> None:
    action_frame = pl.concat([pl.read_parquet(p) for p in actions], how="vertical")
    score_frame = pl.concat([pl.read_parquet(p) for p in scores], how="vertical")
    all_cases = [case for path in cases for case in read_records(path, Case)]
    write_outputs(out_dir, action_frame, score_frame, all_cases)
    log(f"aggregated {len(actions)} action and {len(scores)} score tables -> {out_dir}")
