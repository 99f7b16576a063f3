"""Stage: classify and score every category of one (model, variant, benchmark) run, then the
run's per-case table and triples, in one process (one start-up, each input parsed once)."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import polars as pl

from toolcalib.benchmarks import get_benchmark
from toolcalib.classify.choose import choose_profile
from toolcalib.classify.judge import JudgeProfile
from toolcalib.classify.trajectory import actions_frame
from toolcalib.evaluate import Category, evaluate
from toolcalib.jsonio import dumps
from toolcalib.metrics.write import write_run
from toolcalib.score.multi_turn import Score
from toolcalib.stages import log, write_parquet

SCORE_SCHEMA: dict[str, pl.DataType] = {
    "case_id": pl.String(), "benchmark": pl.String(), "category": pl.String(),
    "model": pl.String(), "variant": pl.String(), "scored": pl.Boolean(),
    "passed": pl.Boolean(), "error_type": pl.String(), "error_message": pl.String(),
    "failed_turn": pl.Int64(), "details": pl.String(),
}
"""Score records as a table; `details` (differences, missing results) as canonical JSON."""


def scores_frame(scores: Sequence[Score]) -> pl.DataFrame:
    rows = [{**s.model_dump(exclude={"details"}), "details": dumps(s.details)} for s in scores]
    return pl.DataFrame(rows, schema=SCORE_SCHEMA)


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector: evaluation builds hundreds of thousands of objects
    and next to no reference cycles, and the collector's passes took ~20% of its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run(profile: str, benchmark: str, source: str, cases: Sequence[str], gold: Sequence[str],
        trajectories: Sequence[str], actions: Sequence[str], scores: Sequence[str],
        per_case: str, triples: str, judge_spec: str | None = None,
        store: str | None = None) -> None:
    """Per category i: `cases[i]`, `gold[i]`, `trajectories[i]` -> `actions[i]`, `scores[i]`;
    then the run's `per_case` table and its `triples` over all of them. `judge_spec`, `store`:
    the judge model and the response store, for profile `judge`."""
    if len({len(cases), len(gold), len(trajectories), len(actions), len(scores)}) != 1:
        raise ValueError("--cases, --gold, --trajectories, --actions and --scores take one file"
                         " per category, in the same order")
    chosen, bench = choose_profile(profile, judge_spec, store), get_benchmark(benchmark)
    action_frames, score_frames, run_cases = [], [], []
    with no_cycle_collection():
        for files, actions_out, scores_out in zip(
                map(Category, cases, gold, trajectories), actions, scores, strict=True):
            done = evaluate(chosen, bench, source, files)
            action_frames.append(actions_frame(done.actions))
            score_frames.append(scores_frame(done.scores))
            run_cases += done.cases
            write_parquet(actions_out, action_frames[-1])
            write_parquet(scores_out, score_frames[-1])
            passed = sum(1 for s in done.scores if s.passed)
            log(f"{files.trajectories}: {len(done.actions)} action rows (profile '{profile}'),"
                f" {len(done.scores)} scored ({passed} passed) -> {actions_out}, {scores_out}")
        write_run(per_case, triples, pl.concat(action_frames), pl.concat(score_frames),
                  run_cases)
    if isinstance(chosen, JudgeProfile):
        log(chosen.summary())
    log(f"per-case table and triples of {len(run_cases)} cases -> {per_case}, {triples}")
