"""The reference policies' τ² meanings (the generic ones, `backends.policy`, cover the rest).

`oracle`: asks first when `ask` is among its task's gold classes; replays the reference actions
one call per step; before each write it states the action (tool and arguments) and asks for
approval, and calls only after the user's reply; at the end it says each piece of information
the task requires it to communicate. On a task without reference actions it refuses (and says
what it must communicate).
`oracle_no_confirm`: the same calls, never asking first. The state comes from the conversation
(`Request.messages`), so each answer is a function of the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from toolcalib.backends.base import Request
from toolcalib.records import Case, Emission, ToolCall

ASK_TEXT = ("Before I can help, could you please give me the details I need: your user id "
            "and the specifics of your request?")
REFUSE_TEXT = ("I'm sorry, but I cannot do this: our policy does not allow it, so I will not "
               "make this change.")
CLOSING = "Your request has been completed."


def confirm_text(action: dict[str, Any]) -> str:
    """The oracle's request for approval of one write: the action and all its arguments."""
    arguments = json.dumps(action.get("arguments") or {}, sort_keys=True, ensure_ascii=False)
    return (f"To confirm: I will call {action['name']} with {arguments}. "
            "Would you like me to proceed (yes/no)?")


def _agent_actions(case: Case) -> list[dict[str, Any]]:
    task = case.environment["task"]
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    return [a for a in actions if a.get("requestor", "assistant") == "assistant"]


def _act(request: Request, confirm: bool) -> Emission:
    case = request.case
    if case is None:
        raise ValueError("a τ² policy answers the steps of a case")
    actions = _agent_actions(case)
    assistant = [m for m in request.messages if m.role == "assistant"]
    done = sum(len(m.tool_calls) for m in assistant)
    texts = [m.content for m in assistant[1:] if not m.tool_calls]
    info = [str(item) for item in (case.environment["task"].get("evaluation_criteria") or {})
            .get("communicate_info") or []]
    if "ask" in case.gold_also and ASK_TEXT not in texts:
        return _text(ASK_TEXT)
    if not actions:
        return _text(" ".join([REFUSE_TEXT, *info]))
    if done >= len(actions):
        return _text(" ".join([CLOSING, *info]))
    action = actions[done]
    if confirm and action["name"] in case.environment.get("write_tools", ()):
        asked = confirm_text(action)
        last_text = next((m.content for m in reversed(request.messages)
                          if m.role == "assistant" and not m.tool_calls), None)
        if last_text != asked or request.messages[-1].role != "user":
            return _text(asked)
    return Emission(tool_calls=[ToolCall(name=action["name"],
                                         arguments=action.get("arguments") or {})],
                    structured=True, parse="ok", finish_reason="tool_calls")


def _text(text: str) -> Emission:
    return Emission(text=text, finish_reason="stop")


POLICIES: dict[str, Callable[[Request], Emission]] = {
    "oracle": lambda request: _act(request, confirm=True),
    "oracle_no_confirm": lambda request: _act(request, confirm=False),
}
