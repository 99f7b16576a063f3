"""Ground-truth execution of a multi-turn case: model-independent, computed once per case."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolcalib.benchmarks.bfcl.executor import Environment
from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.jsonio import RecordIndex
from toolcalib.records import GoldTrace, GoldTurn

if TYPE_CHECKING:
    from toolcalib.records import Case


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
