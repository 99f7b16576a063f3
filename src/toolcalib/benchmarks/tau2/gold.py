"""τ²-bench gold classes, as the published method defines them (one rule name each).

Labels are multi-valued, as the method's: a task's gold class is `refuse` when it has no
reference actions, else `tool_call`; `ask`, orthogonal to both, is a further gold class
(`Case.gold_also`) of a task whose user scenario withholds a needed detail until asked (a
case-insensitive scan of the scenario's JSON for the published phrases). `confirm` is gold
per write call, not per task (`benchmarks.tau2.writes`).
"""

from __future__ import annotations

import json
from typing import Any

ASK_PHRASES: tuple[str, ...] = (
    "if the agent asks", "if the service agent asks", "when the agent asks",
    "when the service agent asks", "do not volunteer", "do not mention unless", "don't mention",
    "withhold", "only reveal", "wait until asked", "if asked",
    "will not say anything that is not asked", "won't say anything that is not asked",
    "do not reveal it",
)
"""The published keyword rule's phrases (its task classification script)."""

REFUSE_RULE = "tau2:refuse:no_reference_actions"
ASK_RULE = "tau2:ask:withholds_detail"
TOOL_CALL_RULE = "tau2:tool_call:reference_actions"


def reference_actions(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list((task.get("evaluation_criteria") or {}).get("actions") or [])


def withheld_phrase(task: dict[str, Any]) -> str | None:
    """The first published phrase the task's user scenario contains, if any."""
    text = json.dumps(task.get("user_scenario") or {}, ensure_ascii=False).lower()
    return next((phrase for phrase in ASK_PHRASES if phrase in text), None)


def gold_class(task: dict[str, Any]) -> tuple[str, str, dict[str, str]]:
    """The task's gold class, the rule that set it, and its further gold classes (`ask`) with
    their rules."""
    also = {"ask": ASK_RULE} if withheld_phrase(task) is not None else {}
    if not reference_actions(task):
        return "refuse", REFUSE_RULE, also
    return "tool_call", TOOL_CALL_RULE, also
