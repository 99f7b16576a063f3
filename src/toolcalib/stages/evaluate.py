"""Stage: classify and score every category of one (model, variant, benchmark) run, then the
run's per-case table and triples, in one process (one start-up, each input parsed once).

Every table is written as JSON lines (`rows.jsonl_bytes`), the triples as CSV: the standard
library builds them, so this process never imports polars. They are renamed into place (never
seen half-written) but not synced to disk: they are derived in about a second from synced
inputs, and a table an OS crash lost or truncated no longer matches the hash `dvc.lock` holds
for it, so `dvc repro` runs the stage again. The syncs were 0.05-0.1 s of the stage's wall time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Annotated, Any

from toolcalib.benchmarks import get_benchmark
from toolcalib.classify.choose import choose_profile
from toolcalib.classify.trajectory import ACTION_COLUMNS
from toolcalib.evaluate import Category, evaluate
from toolcalib.jsonio import InputError, atomic_write_bytes, dumps
from toolcalib.metrics.rows import (
    CASE_COLUMNS,
    CASE_KEYS,
    TRIPLE_COLUMNS,
    case_rows,
    csv_bytes,
    gold_rows,
    jsonl_bytes,
    triple_rows,
)
from toolcalib.stages import Arg, JudgeSpec, JudgeStore, log
from toolcalib.verdicts import Score

SCORE_COLUMNS = list(Score.__struct_fields__)
"""The columns of a score table; `details` (differences, missing results) as canonical JSON."""


def score_rows(scores: Sequence[Score]) -> list[dict[str, Any]]:
    return [{"case_id": s.case_id, "benchmark": s.benchmark, "category": s.category,
             "model": s.model, "variant": s.variant, "scored": s.scored, "passed": s.passed,
             "error_type": s.error_type, "error_message": s.error_message,
             "failed_turn": s.failed_turn, "details": dumps(s.details)} for s in scores]


def write(path: str, data: bytes) -> None:
    """One table, renamed into place but not synced (see the module's docstring)."""
    atomic_write_bytes(path, data, durable=False)


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector: evaluation builds hundreds of thousands of objects
    and next to no reference cycles, and the collector's passes took ~20% of its time. On the
    way out, what was allocated meanwhile moves to the oldest generation (`freeze` then
    `unfreeze`, both constant-time) instead of waiting in the youngest, whose first collection
    after `enable` would walk all of it (~0.03 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def run(profile: Annotated[str, Arg("classifier profile")], benchmark: str,
        source: Annotated[str, Arg("the downloaded release")],
        cases: Annotated[Sequence[str], Arg("one file per category")],
        gold: Annotated[Sequence[str], Arg("per category, as --cases")],
        trajectories: Annotated[Sequence[str], Arg("per category, as --cases")],
        actions: Annotated[Sequence[str], Arg("out: per category, as --cases")],
        scores: Annotated[Sequence[str], Arg("out: per category, as --cases")],
        per_case: Annotated[str, Arg("out: the run's per-case table (JSON lines)")],
        triples: Annotated[str, Arg("out: the run's triples (CSV)")],
        judge_spec: JudgeSpec = None, store: JudgeStore = None) -> None:
    """Per category i: `cases[i]`, `gold[i]`, `trajectories[i]` -> `actions[i]`, `scores[i]`;
    then the run's `per_case` table and its `triples` over all of them. `judge_spec`, `store`:
    the judge model and the response store, for profile `judge`."""
    if len({len(cases), len(gold), len(trajectories), len(actions), len(scores)}) != 1:
        raise InputError("--cases, --gold, --trajectories, --actions and --scores take one file"
                         " per category, in the same order")
    chosen, bench = choose_profile(profile, judge_spec, store), get_benchmark(benchmark)
    run_actions: list[dict[str, Any]] = []
    run_scores: list[dict[str, Any]] = []
    run_cases = []
    run_units: list[dict[str, Any]] = []
    run_structural: dict[tuple[str, ...], dict[str, bool | None]] = {}
    with no_cycle_collection():
        for files, actions_out, scores_out in zip(
                map(Category, cases, gold, trajectories), actions, scores, strict=True):
            done = evaluate(chosen, bench, source, files)
            category_scores = score_rows(done.scores)
            write(actions_out, jsonl_bytes(done.actions, ACTION_COLUMNS))
            write(scores_out, jsonl_bytes(category_scores, SCORE_COLUMNS))
            run_actions += done.actions
            run_scores += category_scores
            run_cases += done.cases
            run_units += done.units
            run_structural |= done.structural
            scored = sum(1 for s in done.scores if s.scored)
            passed = sum(1 for s in done.scores if s.passed)
            log(f"{files.trajectories}: {len(done.actions)} action rows (profile '{profile}'),"
                f" {len(done.scores)} cases, {scored} scored ({passed} passed) -> {actions_out},"
                f" {scores_out}")
        rows = case_rows(run_actions, run_scores, gold_rows(run_cases), run_structural)
        if run_units:
            rows = sorted(rows + run_units, key=itemgetter(*CASE_KEYS))
        write(per_case, jsonl_bytes(rows, CASE_COLUMNS))
        write(triples, csv_bytes(triple_rows(rows), TRIPLE_COLUMNS))
    if summary := chosen.summary():
        log(summary)
    log(f"per-case table and triples of {len(run_cases)} cases -> {per_case}, {triples}")
