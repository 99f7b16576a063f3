"""A judge's confirm replies per corpus row, kept in a file (`tests/data/confirm_judge_*.json`,
written by `tests.confirm.stored_verdicts --export`), so the figures docs/validation.md states
for a judge are recomputed without the model: each stored reply is handed back, for the request
whose sha256 it was the answer to, to `ConfirmJudge` itself (which parses it), and the verdicts
are scored against the hand labels beside the rule's on the same rows, overall and per source
kind. A changed rubric (its version or its rendering of a row) no longer matches the file.

The file: `label` (the judge's name in the tables), `judge` (model, GGUF sha256, engine,
backend, threads, sampling), `rubric` (version), `wall_s`, and `verdicts`, one per judged row
in corpus order: `id`, `request_sha256`, `reply` (the reply as the server sent it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolcalib.backends.base import Answer, Request
from toolcalib.classify import confirm_validation as cv
from toolcalib.classify.confirm_judge import ConfirmJudge, load_confirm_rubric
from toolcalib.classify.profiles import get_profile
from toolcalib.records import Emission, Message

KINDS = ("reference", "real", "handwritten")


def request_sha256(messages: Sequence[Message]) -> str:
    text = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Replayed:
    """A backend that answers each request with the reply stored for it (cacheable: False)."""

    name = "replayed"
    cacheable = False

    def __init__(self, replies: dict[str, str]):
        self.replies = replies

    def identity(self) -> dict[str, Any]:
        return {"backend": "replayed"}

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        return [Emission(text=self.replies[request_sha256(r.messages)]) for r in requests]


def write(path: Path, header: dict[str, Any], verdicts: Sequence[dict[str, str]]) -> None:
    """The file, one verdict a line (readable diffs)."""
    head = json.dumps(header, ensure_ascii=False, indent=1)[:-2]
    body = ",\n".join(json.dumps(v, ensure_ascii=False) for v in verdicts)
    path.write_text(f'{head},\n "verdicts": [\n{body}\n]}}\n', "utf-8")


def judged(rows: Sequence[cv.ConfirmRow], data: dict[str, Any]
           ) -> tuple[list[cv.ConfirmRow], ConfirmJudge]:
    """The corpus rows the file judged (corpus order) and a judge holding their verdicts."""
    rubric = load_confirm_rubric()
    if data["rubric"] != rubric.version:
        raise ValueError(f"verdicts of rubric {data['rubric']}, the rubric is {rubric.version}")
    by_id = {row.id: row for row in rows}
    stored = {v["id"]: v for v in data["verdicts"]}
    if unknown := stored.keys() - by_id.keys():
        raise ValueError(f"rows not in the corpus: {sorted(unknown)[:5]}")
    held = [row for row in rows if row.id in stored]
    for row in held:
        if request_sha256(rubric.messages(row.context())) != stored[row.id]["request_sha256"]:
            raise ValueError(f"{row.id}: the request differs from the one the judge answered")
    judge = ConfirmJudge(Replayed({v["request_sha256"]: v["reply"] for v in stored.values()}),
                         rubric=rubric)
    judge.judge([row.context() for row in held])
    return held, judge


def doc_lines(rows: Sequence[cv.ConfirmRow], data: dict[str, Any]) -> list[str]:
    """The table lines docs/validation.md gives for the file's judge: judge and rule on the
    judged rows, then per source kind."""
    held, judge = judged(rows, data)
    rule = get_profile("default")
    label = f"judge {data['label']}"
    base = "default" if len(held) == len(rows) else f"default on {data['label']}'s rows"
    summary = []
    for kind in (None, *KINDS):
        part = [row for row in held if kind in (None, row.source.kind)]
        suffix = "" if kind is None else f", {kind}"
        summary += [{"profile": base + suffix,
                     **cv.confirm_scores(part, cv.verdicts(part, rule))},
                    {"profile": label + suffix,
                     **cv.confirm_scores(part, judge.judge([r.context() for r in part]))}]
    return cv.render_markdown(summary).splitlines()[2:]


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))
