"""τ²'s write calls as facts (`Benchmark.writes`): every call to a tool τ² marks as a write needs,
before it, an agent message that states the action and a user reply that explicitly approves
it (gold `confirm`, one per-case row per write: `metrics.confirm_rows`).

The message before a write is the agent's last message to the user before the write's step
(the last step of an earlier turn); the user's reply is the message that opened the write's
turn (`TurnTrace.user`). A write in the first turn has no agent message before it. The
judge reads the conversation before the message holding the write instead (the trajectory's
`messages`, the system prompt left out: `WriteContext.messages`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolcalib.records import Message, Step, Trajectory, TurnTrace
from toolcalib.writes import Write, WriteContext, exchange_texts


def kept_steps(trajectory: Trajectory) -> Iterator[tuple[TurnTrace, Step]]:
    """(turn, step) of every step that is part of the conversation, in order (a variant's
    dropped replies are not)."""
    for trace in trajectory.turns:
        for step in trace.steps:
            if not step.dropped:
                yield trace, step


def write_contexts(case: Any, trajectory: Trajectory) -> list[Write]:
    """Every write call of a trajectory, in order, with its turn and context."""
    writes = set(case.environment.get("write_tools") or ())
    found: list[Write] = []
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
            found.append(Write(trace.index, WriteContext(
                call=call, messages=messages, agent_text=agent_text,
                user_reply=trace.user if agent_text else None,
                exchange=exchange_texts(messages, writes) if agent_text else ())))
        if not emission.tool_calls:
            agent_text = emission.text
    return found


def _before_writes(messages: list[Message], writes: set[str]) -> list[tuple[Message, ...]]:
    """For each write call in `messages`, the messages before the one holding it (system
    messages left out)."""
    spoken = tuple(m for m in messages if m.role != "system")
    return [spoken[:index] for index, message in enumerate(spoken)
            if message.role == "assistant" for call in message.tool_calls if call.name in writes]
