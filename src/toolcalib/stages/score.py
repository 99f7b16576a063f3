"""Stage: the benchmark's own verdict (Acc) per case."""

from __future__ import annotations

import polars as pl

from toolcalib.benchmarks import get_benchmark
from toolcalib.jsonio import dumps, read_records
from toolcalib.stages import log, matching, write_parquet

SCORE_SCHEMA: dict[str, pl.DataType] = {
    "case_id": pl.String(), "benchmark": pl.String(), "category": pl.String(),
    "model": pl.String(), "variant": pl.String(), "scored": pl.Boolean(),
    "passed": pl.Boolean(), "error_type": pl.String(), "error_message": pl.String(),
    "failed_turn": pl.Int64(), "details": pl.String(),
}
"""Score records as a table; `details` (differences, missing results) as canonical JSON."""


def run(benchmark: str, cases: str, gold: str, source: str, trajectories: str,
        out: str) -> None:
    bench = get_benchmark(benchmark)
    golds = {trace.case_id: trace for trace in read_records(gold, bench.gold_record)}
    scores = [bench.score(source, case, trajectory, golds.get(case.id))
              for case, trajectory in matching(cases, trajectories)]
    rows = [{**s.model_dump(exclude={"details"}), "details": dumps(s.details)} for s in scores]
    write_parquet(out, pl.DataFrame(rows, schema=SCORE_SCHEMA))
    passed = sum(1 for s in scores if s.passed)
    log(f"scored {len(scores)} trajectories ({passed} passed) -> {out}")
