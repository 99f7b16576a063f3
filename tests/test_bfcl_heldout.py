"""The BFCL irrelevance draws rebuild to their committed bytes (`tests.support.bfcl_heldout`),
keep their quota per model, and their readers' parts name no model and no kind."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support import bfcl_heldout as bh


@pytest.fixture(scope="module")
def panel(bfcl_wheel: Path) -> tuple[list[bh.Reply], dict[str, list[tuple[str, str]]]]:
    return bh.population(bfcl_wheel)


def test_draws_rebuild_to_the_committed_bytes(panel) -> None:
    replies, excluded = panel
    for rule in bh.RULES.values():
        assert bh.jsonl([row.row() for row in bh.sample(rule, replies)]) == \
            rule.turns.read_text("utf-8"), rule.name
    # one gemini record is `[]` with null token counts: its text was not recorded
    assert {model: [case_id for case_id, _ in left] for model, left in excluded.items()
            if left} == {"gemini-2.5-flash-FC": ["irrelevance_230"]}


def test_draws_never_share_a_reply() -> None:
    ids = {name: {row["id"] for row in bh.read_jsonl(rule.turns)}
           for name, rule in bh.RULES.items()}
    for name, rule in bh.RULES.items():
        for earlier in rule.after:
            assert not ids[name] & ids[earlier], (name, earlier)
    assert not ids["v1"] & ids["v2"] and not ids["dev"] & (ids["v1"] | ids["v2"])


@pytest.mark.parametrize("name", sorted(bh.RULES))
def test_draw_keeps_the_quota_per_model_and_kind(name: str) -> None:
    rule = bh.RULES[name]
    rows = bh.read_jsonl(rule.turns)
    assert len(rows) >= 18 * rule.per_model - 1
    assert len({row["id"] for row in rows}) == len(rows)
    per_model = Counter(row["model"] for row in rows)
    assert len(per_model) == 18 and set(per_model.values()) == {rule.per_model}
    for model in per_model:
        kinds = Counter(row["kind"] for row in rows if row["model"] == model)
        assert set(kinds) <= set(bh.KINDS)
        # texts fill the quota unless a model has too few; only then do calls go past theirs
        assert kinds["call"] <= rule.call_quota or \
            kinds["text"] < rule.per_model - rule.call_quota
    for row in rows:
        assert row["id"] == f"{row['model']}:{row['id'].split(':', 1)[1]}"
        assert row["mode"] == ("fc" if row["model"].endswith("-FC") else "prompt")
        assert isinstance(json.loads(row["tools"]), list)


def test_placeholders_are_empty_and_words_are_text() -> None:
    for text in ("[]", "```\n[]\n```", "<tool_call>[]", "ASSISTANT: <tool_call>[]",
                 "assistant\n<tool_call>[]", "missing", "None", "[None]", ""):
        assert bh.is_placeholder(text), text
    for text in ("None of the functions can be used.", "Missing values: please give x.",
                 "[f(a=1)]"):
        assert not bh.is_placeholder(text), text


@pytest.mark.parametrize("name", sorted(bh.RULES))
def test_parts_are_blind_and_cover_every_row(name: str) -> None:
    rule = bh.RULES[name]
    rows = bh.read_jsonl(rule.turns)
    parts = bh.parts(rows, rule.parts)
    assert len(parts) == rule.parts
    readers = bh.reader_ids(rows)
    by_id = {row["id"]: row for row in rows}
    seen = [row["id"] for part in parts for row in part]
    assert sorted(seen) == sorted(readers)
    for part in parts:
        for row in part:
            assert tuple(row) == bh.READER_FIELDS
            original = by_id[readers[row["id"]]]
            assert row["reply"] == original["reply"]
            text = json.dumps(row, ensure_ascii=False)
            assert original["model"] not in text


FROZEN = {
    "bfcl_heldout_turns.jsonl":
        "5f42c7e7f3a1fac5a24209d4a9f63e60d63a1c122153a77565747a4061644191",
    "bfcl_heldout_rubric.md":
        "2790733c9aa63facec6f028c6197569aa4f0916121f2f3b91d6b497dccc25571",
    "bfcl_heldout_reader_labels.jsonl":
        "9f764b48a466a93de6619e603e20a27148a37ecb2f1f868c0e68b36bf8db940a",
    "bfcl_heldout_labels.jsonl":
        "e83e59e4b3144da06309902e91e334265526d269ba00e1c47d9bb7dab90588b0",
    "bfcl_heldout2_turns.jsonl":
        "13c169d2ccb44492fe257d90178240906d74a6bc43dbfafbca44a07cf8452364",
    "bfcl_heldout2_reader_labels.jsonl":
        "4877e1f1621f37655963465816d2b5ce22dc4a1aa0b8d7976f959d85b313b473",
    "bfcl_heldout2_labels.jsonl":
        "22245005fb4caec9dfeac0cc03ab96b0c26d9260211db63bc128b2e19aa453f9",
    "bfcl_heldout3_turns.jsonl":
        "6697a6bc7ac74d9b2e2fdce8ba5532635a3642f648253c2e9eeeec470a3a3620",
    "bfcl_heldout3_reader_labels.jsonl":
        "6a769579b4fe3fbb09842d73a80c2056d284d524f42796d3e85ef2895f00c4ac",
    "bfcl_heldout3_labels.jsonl":
        "b9024a41610ac243086849acec02a4fcde8c36310ab516eab424c0c278a5b564",
}
"""The held-out draws, their rubric, both readers' blind labels and the adjudicated labels,
frozen before any classifier scored them (`v2`: before any rule of the version it tests was
final; issue 41): a changed byte fails here."""


def test_the_draw_its_rubric_and_labels_are_frozen() -> None:
    import hashlib

    for name, sha256 in FROZEN.items():
        assert hashlib.sha256((bh.DATA / name).read_bytes()).hexdigest() == sha256, name


@pytest.mark.parametrize(("name", "agreed"), [("v1", 408), ("v2", 412), ("v3", 413)])
def test_every_row_has_two_blind_labels_and_one_decided_label(name: str, agreed: int) -> None:
    rule = bh.RULES[name]
    turns = [row["id"] for row in bh.read_jsonl(rule.turns)]
    readers = bh.read_jsonl(rule.reader_labels)
    labels = bh.read_jsonl(rule.labels)
    assert [r["id"] for r in readers] == turns == [r["id"] for r in labels]
    assert sum(r["first"] == r["second"] for r in readers) == agreed
    for reader, label in zip(readers, labels, strict=True):
        assert (label["decided"] == "agreed") == (reader["first"] == reader["second"])
        if label["decided"] == "agreed":
            assert label["label"] == reader["first"]
        else:
            assert label["label"] in (reader["first"], reader["second"])


def test_the_corpus_holds_the_draws_with_their_labels_and_contexts(panel) -> None:
    """`python -m tests.support.bfcl_heldout merge RULE` rebuilds the corpus's rows of each
    draw: each reply as the harness read it, its decided label, and what the model saw."""
    corpus = [json.loads(line) for line in bh.CORPUS.read_text("utf-8").splitlines()]
    for rule in bh.RULES.values():
        rows = bh.corpus_rows(rule, bh.sample(rule, panel[0]))
        assert [row for row in corpus if row["source"] == rule.source] == rows, rule.name
        assert rows[0]["context"]["user"] and rows[0]["context"]["tools"]
