"""The probes context variants insert into the loop, as pure decisions over the conversation.

- Halt seam (`sri`, `sri-gate`): when a turn is about to end with no parseable call, the reply
  is dropped and the model is asked once per turn to reconcile the requests with the observed
  state. `sri-gate` lets a reply that asks the user something stand.
- Call seam (`cri`): before a call runs whose function is not visible, or whose required
  argument has no source (user text, observed tool results, the schema's enum or default), the
  call is dropped and the model is re-queried once per turn, told not to call a tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolcalib.records import AsksUser, Emission, Message, ToolCall

RESULT_CHARS = 400
"""Each observed tool result is quoted up to this many characters in the SRI message."""


@dataclass
class ProbeContext:
    """What the probes may look at: the user's requests and what the tools returned."""

    requests: list[str] = field(default_factory=list)
    """User messages, one entry per turn so far (the last is the current request)."""
    observed: list[tuple[ToolCall, str]] = field(default_factory=list)
    visible: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Visible tool docs by name."""


@dataclass(frozen=True)
class Decision:
    fired: bool
    reason: str
    message: Message | None = None


def _render(call: ToolCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                     for k, v in sorted(call.arguments.items()))
    return f"{call.name}({args})"


def sri_message(context: ProbeContext) -> str:
    earlier = context.requests[:-1][::-1]
    lines = ["Before you answer, reconcile the user's requests with the current state."]
    lines.append("Earlier requests (most recent first):")
    lines += [f"{i}. {text}" for i, text in enumerate(earlier, 1)] or ["(none)"]
    lines.append(f"Current request: {context.requests[-1] if context.requests else '(none)'}")
    lines.append("State observed from tool results so far:")
    lines += [f"- {_render(call)} -> {result[:RESULT_CHARS]}"
              for call, result in context.observed] or ["(no tool results yet)"]
    lines.append("Decision rule: if a requested sub-task is not yet reflected in this state, "
                 "make exactly one tool call that makes progress on it; otherwise answer the "
                 "user normally.")
    return "\n".join(lines)


def halt_probe(kind: str, reply: Emission, context: ProbeContext,
               gate: AsksUser | None) -> Decision:
    """`sri-gate` lets a reply stand that `gate` reads by itself as asking the user (a
    classifier profile's reading, handed in by the generate stage; read alone, as it always has
    been: how the classifier reads an emission's context never changes what a model is sent)."""
    if kind == "sri-gate":
        if gate is None:
            raise ValueError("variant 'sri-gate' reads halting replies with a gate (`gate`)")
        if (rule := gate(reply)) is not None:
            return Decision(False, f"reply asks the user ({rule})")
    return Decision(True, "turn about to end without a call",
                    Message(role="user", content=sri_message(context)))


def _sourced(value: Any, schema: dict[str, Any], haystack: str) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if value in (schema.get("enum") or []) or ("default" in schema and value == schema["default"]):
        return True
    if isinstance(value, list | tuple):
        return all(_sourced(item, {}, haystack) for item in value)
    if isinstance(value, dict):
        return all(_sourced(item, {}, haystack) for item in value.values())
    return str(value).lower() in haystack


def unsupported(call: ToolCall, context: ProbeContext) -> str | None:
    """Why a call has no support in the conversation, or None when it has."""
    doc = context.visible.get(call.name)
    if doc is None:
        return f"function '{call.name}' is not among the available tools"
    parameters = doc.get("parameters") or {}
    properties = parameters.get("properties") or {}
    haystack = "\n".join([*context.requests, *(r for _, r in context.observed)]).lower()
    for name in parameters.get("required") or []:
        if name not in call.arguments:
            return f"required argument '{name}' of '{call.name}' is missing"
        if not _sourced(call.arguments[name], properties.get(name) or {}, haystack):
            return (f"required argument '{name}'={json.dumps(call.arguments[name])} of "
                    f"'{call.name}' appears nowhere in the user's messages or tool results")
    return None


def call_probe(calls: list[ToolCall], context: ProbeContext) -> Decision:
    for call in calls:
        reason = unsupported(call, context)
        if reason:
            return Decision(True, reason, Message(role="user", content=(
                f"Do not call a tool in this turn: {reason}. If information is missing, ask "
                "me for it; if none of the available tools can do this, say so.")))
    return Decision(False, "every call is supported")
