"""Ground-truth execution of a multi-turn case: model-independent, computed once per case."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcalib.benchmarks.bfcl.executor import Environment
from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.jsonio import InputError, RecordIndex
from toolcalib.records import Gold, Record

if TYPE_CHECKING:
    from toolcalib.records import Case


class GoldTurn(Record, frozen=True, kw_only=True):
    """One turn of a case's ground truth, executed."""

    results: list[str] = []
    """Result string of each ground-truth call of the turn, in order."""
    state: dict[str, dict[str, Any]]
    """`Environment.state()` after the turn's ground-truth calls."""


class GoldTrace(Gold, frozen=True, kw_only=True):
    """A multi-turn case's ground truth executed once (`gold_trace`), as
    the checker reads it (`turn`, `has_turns`); a single-step case's has no turns."""

    turns: list[GoldTurn]

    def turn(self, index: int) -> GoldTurn:
        if index >= len(self.turns):
            raise InputError(f"{self.case_id}: gold trace has no turn {index}")
        return self.turns[index]

    def has_turns(self, count: int) -> bool:
        return len(self.turns) == count


def read_gold(path: str | Path) -> RecordIndex[GoldTrace]:
    """Each gold trace of a file by case id, decoded when the checker first asks for it (a
    run's trajectories may cover some of a category's cases only)."""
    return RecordIndex(path, GoldTrace, "case_id")


def case_environment(case: Case, release: BfclRelease) -> Environment:
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
