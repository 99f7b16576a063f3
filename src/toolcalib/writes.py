"""A benchmark's write calls as facts (`Benchmark.writes`): each call, the turn it is in and
what came before it (`WriteContext`), what a confirm verdict reads (`classify.confirm`, the
judge's `classify.confirm_judge`). The benchmark states them; the evaluate stage has them
judged by its profile and turned into per-case rows (`metrics.confirm_rows`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from toolcalib.records import Message

if TYPE_CHECKING:
    from toolcalib.records import ToolCall


@dataclass(frozen=True)
class WriteContext:
    """One write call and what came before it: `messages`, the conversation before the
    message holding the call (the agent's system prompt excluded), oldest first; `agent_text`,
    `user_reply` and `exchange` (the agent's earlier texts of the same exchange,
    `exchange_texts`, oldest first), the texts the rule verdict reads
    (`classify.confirm.confirm_verdict`)."""

    call: ToolCall
    messages: tuple[Message, ...]
    agent_text: str | None
    user_reply: str | None
    exchange: tuple[str, ...] = ()


class Write(NamedTuple):
    """One write call of a trajectory: the index of the turn it is in (`TurnTrace.index`) and
    its context."""

    turn: int
    context: WriteContext


def exchange_texts(messages: Sequence[Message], writes: Collection[str]) -> tuple[str, ...]:
    """The texts of the agent's messages to the user (assistant messages with text and no tool
    call) before the last one in `messages` (the request), back to the last call of a tool in
    `writes` before it, oldest first (the exchange: `classify.confirm`'s docstring)."""
    told = [index for index, message in enumerate(messages) if _to_user(message)]
    if not told:
        return ()
    found: list[str] = []
    for message in reversed(messages[:told[-1]]):
        if message.role == "assistant" and any(call.name in writes
                                               for call in message.tool_calls):
            break
        if _to_user(message):
            found.append(message.content)
    return tuple(reversed(found))


def _to_user(message: Message) -> bool:
    return message.role == "assistant" and not message.tool_calls and \
        bool(message.content.strip())
