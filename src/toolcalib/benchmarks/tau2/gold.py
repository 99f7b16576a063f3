"""τ²-bench gold classes, as the published method defines them (one rule name each).

Labels are multi-valued, as the method's: a task's gold class is `refuse` when it has no
reference actions, else `tool_call`; `ask`, orthogonal to both, is a further gold class
(`Case.gold_also`) of a task whose user scenario withholds a needed detail until asked. Which
tasks those are is the config's `ask_gold` (`ASK_GOLD`): the published keyword scan's
candidates, or a subset of them by the method's hand audit of each candidate
(`data/tau2_ask_audit.json`). `confirm` is gold per write call, not per task
(`benchmarks.tau2.writes`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

from toolcalib.benchmarks import CaseSettings
from toolcalib.records import Gold, GoldClass
from toolcalib.registry import unknown

DATA_FILES = ("data/tau2_ask_audit.json",)
"""The published method's audit of the keyword scan's `ask` candidates."""

ASK_PHRASES: tuple[str, ...] = (
    "if the agent asks", "if the service agent asks", "when the agent asks",
    "when the service agent asks", "do not volunteer", "do not mention unless", "don't mention",
    "withhold", "only reveal", "wait until asked", "if asked",
    "will not say anything that is not asked", "won't say anything that is not asked",
    "do not reveal it",
)
"""The published keyword rule's phrases (its task classification script)."""

REFUSE_RULE = "tau2:refuse:no_reference_actions"
TOOL_CALL_RULE = "tau2:tool_call:reference_actions"
AskGold = Literal["published", "candidates", "strict"]
ASK_GOLD: dict[str, str] = {
    "published": "tau2:ask:published_audit",
    "candidates": "tau2:ask:withholds_detail",
    "strict": "tau2:ask:audit_valid",
}
"""`ask_gold` option -> the rule name its `ask` gold carries. `published`: the audited
candidates the method's table keeps (`in_paper_ask_subset`: all but airline 8, 29, 33, 34,
38); `candidates`: every task the keyword scan matches (`ASK_PHRASES`); `strict`: the
candidates the audit labels `valid`."""
DEFAULT_ASK_GOLD: AskGold = "published"


class Tau2Cases(CaseSettings, frozen=True, kw_only=True):
    """The `benchmarks.tau2` fields that shape the cases."""

    ask_gold: AskGold = DEFAULT_ASK_GOLD
    """Which tasks are also `ask` gold (rule names in `ASK_GOLD`): `published`, the method's
    table subset (the keyword candidates its audit keeps: airline 8, retail 28); `candidates`,
    every keyword candidate (airline 13, retail 28); `strict`, the candidates its audit labels
    `valid` (airline 6, retail 13)."""


DEFAULT_CASES = Tau2Cases()


class Tau2Gold(Gold, frozen=True, kw_only=True):
    """A task's ground truth: τ²'s database hashes after replaying its reference actions (None:
    a task without evaluation criteria has none)."""

    db_hash: str | None = None
    user_db_hash: str | None = None


def reference_actions(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list((task.get("evaluation_criteria") or {}).get("actions") or [])


def withheld_phrase(task: dict[str, Any]) -> str | None:
    """The first published phrase the task's user scenario contains, if any."""
    text = json.dumps(task.get("user_scenario") or {}, ensure_ascii=False).lower()
    return next((phrase for phrase in ASK_PHRASES if phrase in text), None)


@cache
def ask_audit() -> dict[str, dict[str, dict[str, Any]]]:
    """Domain -> task id -> the audit's `label` and `in_paper_ask_subset`."""
    path = Path(__file__).resolve().parents[2] / DATA_FILES[0]
    audit: dict[str, dict[str, dict[str, Any]]] = json.loads(
        path.read_text(encoding="utf-8"))["tasks"]
    return audit


def is_ask(task: dict[str, Any], domain: str, ask_gold: str) -> bool:
    """Whether `ask` is a gold class of the task under option `ask_gold` (`ASK_GOLD`)."""
    if ask_gold not in ASK_GOLD:
        raise unknown("ask_gold", ask_gold, ASK_GOLD)
    if ask_gold == "candidates":
        return withheld_phrase(task) is not None
    audit = ask_audit().get(domain, {}).get(task["id"])
    if audit is None:
        return False
    return bool(audit["in_paper_ask_subset"] if ask_gold == "published"
                else audit["label"] == "valid")


def gold_class(task: dict[str, Any], domain: str, *, ask_gold: str = DEFAULT_ASK_GOLD
               ) -> tuple[GoldClass, str, dict[GoldClass, str]]:
    """The task's gold class, the rule that set it, and its further gold classes (`ask`, by
    option `ask_gold`) with their rules."""
    also: dict[GoldClass, str] = {"ask": ASK_GOLD[ask_gold]} \
        if is_ask(task, domain, ask_gold) else {}
    if not reference_actions(task):
        return "refuse", REFUSE_RULE, also
    return "tool_call", TOOL_CALL_RULE, also
