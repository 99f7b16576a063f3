"""Classify a whole trajectory: one row per emission and one per turn of its case."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcalib.classify.base import EMPTY, EmissionAction, Profile, turn_action
from toolcalib.jsonio import InputError
from toolcalib.records import ACTION_COLUMNS, MODEL_OUTCOMES

__all__ = ["ACTION_COLUMNS", "UNREACHED", "action_rows", "classify_trajectory"]

if TYPE_CHECKING:
    from toolcalib.records import ActionRow, Case, Trajectory

UNREACHED = EmissionAction(action=None, rule="unreached")
"""The action of a case turn the trajectory never reached."""


def classify_trajectory(trajectory: Trajectory, case: Case,
                        profile: Profile) -> list[ActionRow]:
    """Rows for every emission, then the turn, of every turn of `case` (unreached ones too,
    and, for a case with `open_turns`, the turns its simulated user opened)."""
    from toolcalib.records import ActionRow

    return [ActionRow(**row) for row in action_rows(trajectory, case, profile)]


def action_rows(trajectory: Trajectory, case: Case,
                profile: Profile) -> list[dict[str, Any]]:
    """`classify_trajectory`'s rows as plain dicts, for tables: built from validated records,
    so validating each row again (most of the cost of classifying a run) is skipped."""
    if (trajectory.benchmark, trajectory.case_id) != (case.benchmark, case.id):
        raise InputError(
            f"trajectory {trajectory.benchmark}/{trajectory.case_id} is not case"
            f" {case.benchmark}/{case.id}"
        )
    traces = {trace.index: trace for trace in trajectory.turns}
    extra = sorted(set(traces) - {turn.index for turn in case.turns})
    if extra and not case.open_turns:
        raise InputError(f"trajectory {trajectory.case_id}: turns {extra} are not in the case")
    last = case.turns[-1]
    turn_golds = [(turn.index, turn.gold_action) for turn in case.turns] + \
        [(index, last.gold_action) for index in extra]
    case_id, model, variant, benchmark = case.id, trajectory.model, trajectory.variant, \
        case.benchmark
    category, outcome = case.category, trajectory.outcome
    scored = outcome in MODEL_OUTCOMES
    rows: list[dict[str, Any]] = []
    for index, gold in turn_golds:
        is_gold = index == case.gold_turn
        trace = traces.get(index)
        steps = trace.steps if trace else []
        actions = [profile.classify(step.emission) for step in steps]
        for step, action in zip(steps, actions, strict=True):
            rows.append({  # ACTION_COLUMNS
                "case_id": case_id, "model": model, "variant": variant, "benchmark": benchmark,
                "category": category, "outcome": outcome, "scored": scored,
                "level": "dropped" if step.dropped else "emission", "turn": index,
                "step": step.index, "gold_action": gold, "is_gold_turn": is_gold,
                "action": action.action, "rule": action.rule, "evidence": action.evidence,
                "probes_fired": 0})
        kept = [action for step, action in zip(steps, actions, strict=True) if not step.dropped]
        decided = UNREACHED if trace is None else turn_action(kept) or EMPTY
        fired = sum(1 for i in trajectory.interventions if i.turn == index and i.fired) \
            if trajectory.interventions else 0
        rows.append({
            "case_id": case_id, "model": model, "variant": variant, "benchmark": benchmark,
            "category": category, "outcome": outcome, "scored": scored, "level": "turn",
            "turn": index, "step": None, "gold_action": gold, "is_gold_turn": is_gold,
            "action": decided.action, "rule": decided.rule, "evidence": decided.evidence,
            "probes_fired": fired})
    return rows
