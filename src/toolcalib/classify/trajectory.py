"""Classify a whole trajectory: one row per emission and one per turn of its case, each
emission read in its turn's context (`turn_contexts`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from toolcalib.classify.base import EMPTY, Context, EmissionAction, Profile, turn_action
from toolcalib.jsonio import InputError
from toolcalib.records import ACTION_COLUMNS, MODEL_OUTCOMES

__all__ = ["ACTION_COLUMNS", "UNREACHED", "action_rows", "classify_trajectory", "turn_contexts"]

if TYPE_CHECKING:
    from toolcalib.records import ActionRow, Case, Trajectory, TurnTrace

UNREACHED = EmissionAction(action=None, rule="unreached")
"""The action of a case turn the trajectory never reached."""


class _Named(msgspec.Struct):
    name: str


_NAMES = msgspec.json.Decoder(list[_Named])
"""Reads only the names of function docs (`Case.tools_json`): the rest is skipped unread."""


def turn_contexts(case: Case, traces: dict[int, TurnTrace]) -> dict[int, Context]:
    """The context of each turn of `traces` (`classify.base.Context`), from `case` as the
    trajectory's variant presents it (`Variant.adjust_case`: its tools hidden under a variant
    that hides them): the user message(s) that opened the turn, the simulated user's
    (`TurnTrace.user`) where the trajectory records one, else the case turn's; the names of
    the tools offered, the case's and those every turn up to it added. A turn beyond the
    case's (`open_turns`) has the last case turn's tools."""
    offered = [doc.name for doc in _NAMES.decode(case.tools_json)]
    known: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for turn in case.turns:
        offered += [doc["name"] for doc in turn.tools_added]
        known[turn.index] = (tuple(m.content for m in turn.messages if m.role == "user"),
                             tuple(offered))
    last = (), tuple(offered)
    contexts = {}
    for index, trace in traces.items():
        requested, tools = known.get(index, last)
        user = requested if trace.user is None else (trace.user,)
        contexts[index] = Context(user=user, tools=tools)
    return contexts


def classify_trajectory(trajectory: Trajectory, case: Case,
                        profile: Profile) -> list[ActionRow]:
    """Rows for every emission, then the turn, of every turn of `case` (unreached ones too,
    and, for a case with `open_turns`, the turns its simulated user opened); `case` as the
    trajectory's variant presents it (`action_rows`)."""
    from toolcalib.records import ActionRow

    return [ActionRow(**row) for row in action_rows(trajectory, case, profile)]


def action_rows(trajectory: Trajectory, case: Case,
                profile: Profile) -> list[dict[str, Any]]:
    """`classify_trajectory`'s rows as plain dicts, for tables: built from validated records,
    so validating each row again (most of the cost of classifying a run) is skipped. `case`:
    as the trajectory's variant presents it (`Variant.adjust_case`), gold classes and offered
    tools both; each emission is classified in its turn's context (`turn_contexts`)."""
    if (trajectory.benchmark, trajectory.case_id) != (case.benchmark, case.id):
        raise InputError(
            f"trajectory {trajectory.benchmark}/{trajectory.case_id} is not case"
            f" {case.benchmark}/{case.id}"
        )
    traces = {trace.index: trace for trace in trajectory.turns}
    contexts = turn_contexts(case, traces)
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
        actions = [profile.classify(step.emission, contexts[index]) for step in steps]
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
