"""The published-turns corpus rebuilds to its committed bytes (`tests.published_turns`); the
second reading labels the second-pass rows and docs state its agreement figures."""

from __future__ import annotations

import json

from tests import published_second_pass as sp
from tests import published_turns as pt
from toolcalib.classify.validation import load_corpus
from toolcalib.records import ACTION_CLASSES


def assert_label_rows(rows: list[dict[str, object]]) -> None:
    """Each row is an id, an action class and a one-line reason."""
    for row in rows:
        assert set(row) == {"id", "label", "reason"}
        assert row["label"] in ACTION_CLASSES
        assert isinstance(row["reason"], str)
        assert row["reason"].strip() and "\n" not in row["reason"]


def test_sample_rebuilds_to_the_committed_bytes() -> None:
    assert pt.jsonl([t.row() for t in pt.sampled(pt.ROUNDS)]) == pt.TURNS.read_text("utf-8")
    assert pt.jsonl(pt.second_pass(pt.sampled({}))) == pt.SECOND_PASS.read_text("utf-8")
    assert pt.jsonl([t.row() for t in pt.heldout_draw()]) == pt.HELDOUT.read_text("utf-8")


def test_heldout_draw_is_text_only_and_disjoint_from_the_first() -> None:
    first = {row["id"] for row in pt.read_jsonl(pt.TURNS)}
    held = pt.read_jsonl(pt.HELDOUT)
    assert len(held) == pt.HELDOUT_SIZE == len({row["id"] for row in held})
    assert not first & {row["id"] for row in held}
    assert not any(row["structured_calls"] for row in held)
    labels = pt.read_jsonl(pt.HELDOUT_LABELS)
    assert [row["id"] for row in labels] == [row["id"] for row in held]
    assert_label_rows(labels)


def test_turn_ids_are_unique_and_name_file_simulation_and_message() -> None:
    turns = pt.population()
    assert len({t.id for t in turns}) == len(turns)
    stems = {t.file.rsplit("/", 1)[-1].removesuffix(".json") for t in turns}
    assert {t.id.split(":")[0] for t in turns} == stems
    assert not any(t.id.endswith(":0") for t in turns)  # τ²'s greeting is no agent turn


def test_merge_keeps_other_rows_and_is_deterministic() -> None:
    corpus = pt.CORPUS.read_text("utf-8")
    rebuilt = pt.rebuilt_corpus()
    assert rebuilt == pt.merged(rebuilt, pt.labelled_rows())
    others = [line for line in corpus.splitlines()
              if json.loads(line)["source"] not in (pt.SOURCE, pt.HELDOUT_SOURCE)]
    assert rebuilt.splitlines()[:len(others)] == others
    published = [json.loads(line) for line in rebuilt.splitlines()[len(others):]]
    assert [row["id"] for row in published] == [
        t["id"] for t in pt.read_jsonl(pt.TURNS) + pt.read_jsonl(pt.HELDOUT)]
    assert [row["source"] for row in published] == (
        [pt.SOURCE] * len(pt.read_jsonl(pt.TURNS)) + [pt.HELDOUT_SOURCE] * pt.HELDOUT_SIZE)
    assert {tuple(row) for row in published} == {
        ("id", "text", "structured_calls", "parse", "label", "reason", "source")}


def test_corpus_holds_the_published_rows() -> None:
    assert pt.CORPUS.read_text("utf-8") == pt.rebuilt_corpus()
    rows = load_corpus(pt.CORPUS)
    assert sum(row.source == "published" for row in rows) == len(pt.read_jsonl(pt.TURNS))
    assert sum(row.source == pt.HELDOUT_SOURCE for row in rows) == pt.HELDOUT_SIZE


def test_second_reading_labels_exactly_the_second_pass_rows() -> None:
    rows = pt.read_jsonl(sp.SECOND_LABELS)
    assert [row["id"] for row in rows] == [row["id"] for row in pt.read_jsonl(pt.SECOND_PASS)]
    assert pt.jsonl(rows) == sp.SECOND_LABELS.read_text("utf-8")
    assert_label_rows(rows)


def test_docs_state_the_second_pass_agreement() -> None:
    found = sp.agreement()
    assert (len(found.ids), found.agreed(), round(found.kappa() or 0, 3)) == (100, 91, 0.866)
    held = sp.heldout_agreement()
    assert (len(held.ids), held.agreed(), round(held.kappa() or 0, 3)) == (200, 196, 0.972)
    docs = " ".join((pt.DATA.parents[1] / "docs" / "validation.md").read_text("utf-8").split())
    assert sp.summary(found) in docs
    assert sp.summary(held) in docs


def test_heldout_second_reading_labels_every_heldout_row() -> None:
    rows = pt.read_jsonl(sp.HELDOUT_SECOND_LABELS)
    assert [row["id"] for row in rows] == [row["id"] for row in pt.read_jsonl(pt.HELDOUT)]
    assert pt.jsonl(rows) == sp.HELDOUT_SECOND_LABELS.read_text("utf-8")
    assert_label_rows(rows)
