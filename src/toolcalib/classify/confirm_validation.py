"""Validate confirm verdicts (was a write confirmed before it ran?) against a hand-labelled
corpus of write contexts (`tests/data/confirm_corpus.jsonl`).

A corpus is JSONL, one row per write call: `id`; `source` (`kind`: `reference`, `real`,
`handwritten` or `published`, and for a row taken from a trajectory its file, agent, user,
case, write number and turn; a `published` row names its results `file` and `model`, the
published run's); `messages`, the conversation before the message holding the write (at most
the last 10, as the judge sees them: `records.Message` fields); `call` (`records.ToolCall`);
`agent_text`, `user_reply` and `exchange` (the agent's earlier texts of the same exchange, taken
from the whole conversation: `writes.exchange_texts`; absent: none), what the rule
verdict reads (`writes.WriteContext`); the hand label `confirmed` and its one-line
`reason`.

Metrics per profile (its `Profile.confirm_verdicts`; every rule profile gives the rule's verdict,
so `default` stands for them): n, accuracy (share of rows whose verdict is the label),
Cohen's kappa (`validation.cohen_kappa`, classes confirmed / not confirmed), the confusion
counts (tp: confirmed and labelled so, fp, fn, tn) and `unparsed`, the judge's replies that
were not yes/no (counted as not confirmed, as the evaluate stage counts them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from msgspec import Meta

from toolcalib.classify.base import ConfirmVerdict, Profile
from toolcalib.classify.validation import LabelledRow, cohen_kappa, load_rows
from toolcalib.config import StrictModel
from toolcalib.records import Message, ToolCall
from toolcalib.writes import WriteContext

WINDOW = 10
SUMMARY_COLUMNS = ["profile", "n", "accuracy", "kappa", "tp", "fp", "fn", "tn", "unparsed"]
UNPARSED = "judge:confirm:unparsed"


class Source(StrictModel, frozen=True, kw_only=True):
    kind: Literal["reference", "real", "handwritten", "published"]
    trajectories: str | None = None
    file: str | None = None
    model: str | None = None
    agent: str | None = None
    user: str | None = None
    case_id: str | None = None
    write: Annotated[int, Meta(ge=1)] | None = None
    turn: Annotated[int, Meta(ge=0)] | None = None


class ConfirmRow(LabelledRow, frozen=True, kw_only=True):
    """One labelled write context."""

    source: Source
    messages: Annotated[list[dict[str, Any]], Meta(max_length=WINDOW)]
    call: dict[str, Any]
    agent_text: str | None
    user_reply: str | None
    exchange: list[str] = []
    confirmed: bool
    reason: Annotated[str, Meta(min_length=1)]

    def context(self) -> WriteContext:
        """The write as a profile sees it."""
        messages = tuple(Message(role=m["role"], content=m.get("content", ""),
                                 tool_calls=[ToolCall(**c) for c in m.get("tool_calls", [])],
                                 name=m.get("name")) for m in self.messages)
        return WriteContext(call=ToolCall(**self.call), messages=messages,
                            agent_text=self.agent_text, user_reply=self.user_reply,
                            exchange=tuple(self.exchange))


def load_confirm_corpus(path: str | Path) -> list[ConfirmRow]:
    """The rows of a confirm corpus; a bad line is an error naming its line; ids are unique."""
    return load_rows(path, ConfirmRow)


def verdicts(rows: Sequence[ConfirmRow], profile: Profile) -> list[ConfirmVerdict]:
    return profile.confirm_verdicts([row.context() for row in rows])


def confirm_scores(rows: Sequence[ConfirmRow], found: Sequence[ConfirmVerdict]
                   ) -> dict[str, Any]:
    """n, accuracy, kappa, confusion counts and unparsed replies of one profile's verdicts."""
    gold = [row.confirmed for row in rows]
    said = [verdict.confirmed for verdict in found]
    pairs = Counter(zip(gold, said, strict=True))
    return {"n": len(gold), "accuracy": (pairs[True, True] + pairs[False, False]) / len(gold),
            "kappa": cohen_kappa([str(g) for g in gold], [str(s) for s in said]),
            "tp": pairs[True, True], "fp": pairs[False, True], "fn": pairs[True, False],
            "tn": pairs[False, False],
            "unparsed": sum(verdict.rule == UNPARSED for verdict in found)}


def confirm_validation(path: str | Path, profiles: Sequence[Profile]) -> list[dict[str, Any]]:
    """One summary row (`SUMMARY_COLUMNS`) per profile."""
    rows = load_confirm_corpus(path)
    return [{"profile": profile.name, **confirm_scores(rows, verdicts(rows, profile))}
            for profile in profiles]


def render_markdown(summary: Sequence[dict[str, Any]]) -> str:
    lines = ["| profile | n | accuracy | kappa | tp | fp | fn | tn | unparsed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['profile']} | {r['n']} | {_number(r['accuracy'])} | {_number(r['kappa'])}"
              f" | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} | {r['unparsed']} |"
              for r in summary]
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
