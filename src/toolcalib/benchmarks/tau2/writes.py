"""`confirm` gold per write call: every call to a tool τ² marks as a write needs, before it, an
agent message that states the action and a user reply that explicitly approves it.

Each write call of a trajectory is a unit of the per-case table with gold `confirm`: id
`<case id>#write<k>` (k counts the trajectory's write calls from 1), emitted
`confirm|tool_call` when the run's profile confirms it (`Profile.confirm_verdicts`: the
rule-based verdict, `classify.confirm`, for every rule profile; the judge's for `judge`), else
`tool_call`; its verdict (`passed`) is the trajectory's reward. So `confirm` rows
count writes, not tasks, and weigh each write equally (a task with three writes counts
three times); TER on them is 1 by construction (every unit is a call).

The message before a write is the agent's last message to the user before the write's step
(the last step of an earlier turn); the user's reply is the message that opened the write's
turn (`TurnTrace.user`). A write in the first turn has no agent message before it. The
judge reads the conversation before the message holding the write instead (the trajectory's
`messages`, the system prompt left out: `WriteContext.messages`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolcalib.classify.base import Profile, WriteContext
from toolcalib.classify.confirm import exchange_texts
from toolcalib.metrics.rows import CASES, bound_of, recorded_of
from toolcalib.records import MODEL_OUTCOMES, Message, Step, Trajectory, TurnTrace


def kept_steps(trajectory: Trajectory) -> Iterator[tuple[TurnTrace, Step]]:
    """(turn, step) of every step that is part of the conversation, in order (a variant's
    dropped replies are not)."""
    for trace in trajectory.turns:
        for step in trace.steps:
            if not step.dropped:
                yield trace, step


def write_contexts(case: Any, trajectory: Trajectory) -> list[tuple[int, WriteContext]]:
    """(turn index, context) of every write call of a trajectory, in order."""
    writes = set(case.environment.get("write_tools") or ())
    found: list[tuple[int, WriteContext]] = []
    before = iter(_before_writes(trajectory.messages, writes))
    agent_text: str | None = None
    for trace, step in kept_steps(trajectory):
        emission = step.emission
        for call in emission.tool_calls:
            if call.name not in writes:
                continue
            messages = next(before, None)
            if messages is None:
                raise ValueError(f"trajectory of {trajectory.case_id}: its messages hold "
                                 "fewer write calls than its steps")
            found.append((trace.index, WriteContext(
                call=call, messages=messages, agent_text=agent_text,
                user_reply=trace.user if agent_text else None,
                exchange=exchange_texts(messages, writes) if agent_text else ())))
        if not emission.tool_calls:
            agent_text = emission.text
    return found


def write_units(case: Any, trajectory: Trajectory, score: Any,
                profile: Profile) -> list[dict[str, Any]]:
    """The per-case rows (`metrics.rows.CASES`) of every write call of a trajectory,
    each confirmed or not as `profile` says; a unit's structural reading (the published
    method's, `structural`) is its confirm verdict, none when unscored."""
    contexts = write_contexts(case, trajectory)
    verdicts = profile.confirm_verdicts([context for _, context in contexts])
    scored = trajectory.outcome in MODEL_OUTCOMES and bool(score.scored)
    return [_unit(case, trajectory, score, turn, number, verdict.confirmed, scored)
            for number, ((turn, _), verdict) in enumerate(zip(contexts, verdicts, strict=True),
                                                          start=1)]


def _before_writes(messages: list[Message], writes: set[str]) -> list[tuple[Message, ...]]:
    """For each write call in `messages`, the messages before the one holding it (system
    messages left out)."""
    spoken = tuple(m for m in messages if m.role != "system")
    return [spoken[:index] for index, message in enumerate(spoken)
            if message.role == "assistant" for call in message.tool_calls if call.name in writes]


def _unit(case: Any, trajectory: Trajectory, score: Any, turn: int, number: int,
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
