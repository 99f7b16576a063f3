"""Ground-truth execution of a multi-turn case: model-independent, computed once per case."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from toolcalib.benchmarks.bfcl_release import BfclRelease
from toolcalib.execute.executor import Environment
from toolcalib.records import Case, CaseView, Record


class GoldTurn(Record):
    results: list[str] = Field(default_factory=list)
    """Result string of each ground-truth call of the turn, in order."""
    state: dict[str, dict[str, Any]]
    """`Environment.state()` after the turn's ground-truth calls."""


class GoldTrace(Record):
    case_id: str
    category: str
    turns: list[GoldTurn]


def case_environment(case: Case | CaseView, release: BfclRelease) -> Environment:
    """A fresh environment built from the case's `initial_config`."""
    env = case.environment
    return Environment(
        release, env["involved_classes"], env["initial_config"], bool(env["long_context"])
    )


def gold_trace(case: Case, release: BfclRelease) -> GoldTrace:
    """Run every turn's ground-truth calls on one environment that persists across turns."""
    environment = case_environment(case, release)
    turns = []
    for turn in case.turns:
        results = environment.execute_all(turn.gold_calls)
        turns.append(GoldTurn(results=results, state=environment.state()))
    return GoldTrace(case_id=case.id, category=case.category, turns=turns)
