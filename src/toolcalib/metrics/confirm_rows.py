"""The per-case rows of a trajectory's write calls, gold `confirm` (`metrics.rows.CASES`).

Each write call a benchmark states (`Benchmark.writes`, τ²'s) is a unit of the per-case table:
id `<case id>#write<k>` (k counts the trajectory's write calls from 1), emitted
`confirm|tool_call` when the run's profile confirms it (`Profile.confirm_verdicts`, asked by
the evaluate stage), else `tool_call`; its verdict (`passed`) is the trajectory's. So
`confirm` rows count writes, not tasks, and weigh each write equally (a task with three writes
counts three times); TER on them is 1 by construction (every unit is a call). A unit's
structural reading (the published method's) is its confirm verdict, none when unscored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolcalib.metrics.rows import CASES, bound_of, recorded_of
from toolcalib.records import MODEL_OUTCOMES, Case, Trajectory
from toolcalib.verdicts import Score
from toolcalib.writes import Write


def confirm_rows(case: Case, trajectory: Trajectory, score: Score, writes: Sequence[Write],
                 confirmed: Sequence[bool]) -> list[dict[str, Any]]:
    """The rows of `writes` (the trajectory's, in order), each `confirmed` or not."""
    scored = trajectory.outcome in MODEL_OUTCOMES and bool(score.scored)
    return [_row(case, trajectory, score, write.turn, number, verdict, scored)
            for number, (write, verdict) in enumerate(zip(writes, confirmed, strict=True),
                                                      start=1)]


def _row(case: Case, trajectory: Trajectory, score: Score, turn: int, number: int,
         confirmed: bool, scored: bool) -> dict[str, Any]:
    classes = "confirm|tool_call" if confirmed else "tool_call"
    passed = score.passed
    return CASES.row({
        "model": trajectory.model, "variant": trajectory.variant, "benchmark": case.benchmark,
        "category": case.category, "case_id": f"{case.id}#write{number}",
        "gold_action": "confirm", "gold_turn": turn, "gold_turn_gold": "confirm",
        "emitted": classes, "gold_emitted": confirmed,
        "gold_turn_class": "confirm" if confirmed else "tool_call", "gold_turn_hit": confirmed,
        "tool_call_emitted": True, "gold_turn_tool_call": True, "emission_classes": classes,
        "gold_emitted_any_step": confirmed, "passed": passed, "scored": scored,
        "outcome": trajectory.outcome, "error_type": score.error_type,
        "bound": bound_of(scored, passed, confirmed),
        "probes_fired": 0, "unclosed_reasoning_turns": 0, "ambiguous_turns": 0,
        "unknown_turns": 0,
        "structural_hit": confirmed if scored else None,
        **recorded_of({"details": score.details}),
    })
