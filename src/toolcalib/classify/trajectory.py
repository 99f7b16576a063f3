"""Classify a whole trajectory: one row per emission and one per turn of its case."""

from __future__ import annotations

from typing import Any, Literal

from toolcalib.classify.base import EMPTY, EmissionAction, Profile, turn_action
from toolcalib.records import (
    MODEL_OUTCOMES,
    ActionClass,
    Case,
    CaseView,
    GoldClass,
    Outcome,
    Record,
    Trajectory,
    TrajectoryView,
)

UNREACHED = EmissionAction(action=None, rule="unreached")
"""The action of a case turn the trajectory never reached."""


class ActionRow(Record):
    """One emission (level `emission`) or one turn (level `turn`, step None) of a trajectory."""

    case_id: str
    model: str
    variant: str
    benchmark: str
    category: str
    outcome: Outcome
    scored: bool
    """False for infrastructure outcomes: kept, but out of every denominator."""
    level: Literal["emission", "dropped", "turn"]
    """`dropped`: an emission a variant's probe withdrew (kept, not part of the turn's class)."""
    turn: int
    step: int | None
    gold_action: GoldClass
    """The gold class of this turn."""
    is_gold_turn: bool
    action: ActionClass | None
    rule: str
    evidence: str
    probes_fired: int = 0
    """On turn rows: how many times the variant's probe fired in this turn."""


ACTION_COLUMNS = ["case_id", "model", "variant", "benchmark", "category", "outcome", "scored",
                  "level", "turn", "step", "gold_action", "is_gold_turn", "action", "rule",
                  "evidence", "probes_fired"]
"""The columns of an action table, in order."""


def classify_trajectory(trajectory: Trajectory | TrajectoryView, case: Case | CaseView,
                        profile: Profile) -> list[ActionRow]:
    """Rows for every emission, then the turn, of every turn of `case` (unreached ones too)."""
    return [ActionRow(**row) for row in action_rows(trajectory, case, profile)]


def action_rows(trajectory: Trajectory | TrajectoryView, case: Case | CaseView,
                profile: Profile) -> list[dict[str, Any]]:
    """`classify_trajectory`'s rows as plain dicts, for tables: built from validated records,
    so validating each row again (most of the cost of classifying a run) is skipped."""
    if (trajectory.benchmark, trajectory.case_id) != (case.benchmark, case.id):
        raise ValueError(
            f"trajectory {trajectory.benchmark}/{trajectory.case_id} is not case"
            f" {case.benchmark}/{case.id}"
        )
    traces = {trace.index: trace for trace in trajectory.turns}
    extra = sorted(set(traces) - {turn.index for turn in case.turns})
    if extra:
        raise ValueError(f"trajectory {trajectory.case_id}: turns {extra} are not in the case")
    common = {
        "case_id": case.id,
        "model": trajectory.model,
        "variant": trajectory.variant,
        "benchmark": case.benchmark,
        "category": case.category,
        "outcome": trajectory.outcome,
        "scored": trajectory.outcome in MODEL_OUTCOMES,
    }
    rows: list[dict[str, Any]] = []
    for turn in case.turns:
        where = {
            **common,
            "turn": turn.index,
            "gold_action": turn.gold_action,
            "is_gold_turn": turn.index == case.gold_turn,
        }
        trace = traces.get(turn.index)
        steps = trace.steps if trace else []
        actions = [profile.classify(step.emission) for step in steps]
        for step, action in zip(steps, actions, strict=True):
            level = "dropped" if step.dropped else "emission"
            rows.append(_row(where, action, level=level, step=step.index))
        kept = [action for step, action in zip(steps, actions, strict=True) if not step.dropped]
        decided = UNREACHED if trace is None else turn_action(kept) or EMPTY
        fired = sum(1 for i in trajectory.interventions if i.turn == turn.index and i.fired)
        rows.append(_row(where, decided, level="turn", step=None, probes_fired=fired))
    return rows


def _row(where: dict[str, Any], action: EmissionAction, **fields: Any) -> dict[str, Any]:
    return {**where, "probes_fired": 0, "action": action.action, "rule": action.rule,
            "evidence": action.evidence, **fields}

