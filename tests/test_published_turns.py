"""The published-turns corpus rebuilds to its committed bytes (`tests.support.published_turns`); the
second reading labels the second-pass rows and docs state its agreement figures."""

from __future__ import annotations

import json

import pytest

from tests.support import published_second_pass as sp
from tests.support import published_turns as pt
from tests.support.corpus_merge import merged
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
    for draw, turns in pt.heldout_draws().items():
        path = pt.HELDOUT_DRAWS[draw][0]
        assert pt.jsonl([t.row() for t in turns]) == path.read_text("utf-8")


def test_heldout_draws_are_text_only_and_disjoint_from_the_first_and_each_other() -> None:
    first = {row["id"] for row in pt.read_jsonl(pt.TURNS)}
    seen = set(first)
    for draw, (turns, labels_path, _) in pt.HELDOUT_DRAWS.items():
        held = pt.read_jsonl(turns)
        ids = {row["id"] for row in held}
        assert len(held) == len(ids) == (181 if draw == 3 else pt.HELDOUT_SIZE)
        assert not seen & ids
        seen |= ids
        assert not any(row["structured_calls"] for row in held)
        labels = pt.read_jsonl(labels_path)
        assert [row["id"] for row in labels] == [row["id"] for row in held]
        assert_label_rows(labels)
    # the last draw leaves no text-only turn outside the first corpus unread
    assert seen - first == {t.id for t in pt.population() if not t.calls and t.id not in first}


def test_turn_ids_are_unique_and_name_file_simulation_and_message() -> None:
    turns = pt.population()
    assert len({t.id for t in turns}) == len(turns)
    stems = {t.file.rsplit("/", 1)[-1].removesuffix(".json") for t in turns}
    assert {t.id.split(":")[0] for t in turns} == stems
    assert not any(t.id.endswith(":0") for t in turns)  # τ²'s greeting is no agent turn


def test_merge_keeps_other_rows_and_is_deterministic(tau2_release) -> None:
    corpus = pt.CORPUS.read_text("utf-8")
    rebuilt = pt.rebuilt_corpus(tau2_release)
    assert rebuilt == merged(rebuilt, pt.labelled_rows(tau2_release), pt.published_sources())
    def mine(line: str) -> bool:
        return json.loads(line)["source"] in pt.published_sources()

    others = [line for line in corpus.splitlines() if not mine(line)]
    assert [line for line in rebuilt.splitlines() if not mine(line)] == others
    published = [json.loads(line) for line in rebuilt.splitlines() if mine(line)]
    draws = pt.HELDOUT_DRAWS.values()
    assert [row["id"] for row in published] == [
        t["id"] for path in (pt.TURNS, *(turns for turns, _, _ in draws))
        for t in pt.read_jsonl(path)]
    assert [row["source"] for row in published] == [pt.SOURCE] * len(pt.read_jsonl(pt.TURNS)) + [
        source for turns, _, source in draws for _ in pt.read_jsonl(turns)]
    assert {tuple(row) for row in published} == {
        ("id", "text", "structured_calls", "parse", "label", "reason", "source", "context")}


def test_published_rows_carry_what_the_agent_saw(tau2_release) -> None:
    """Each row's context is the user's whole message that opened the turn (the turns file
    keeps its first characters) and the tools of its domain, as an imported run's case has
    them."""
    from toolcalib.benchmarks.tau2.environment import tool_schemas

    paths = (pt.TURNS, *(turns for turns, _, _ in pt.HELDOUT_DRAWS.values()))
    turns = {t["id"]: t for path in paths for t in pt.read_jsonl(path)}
    domains = {d: tuple(doc["name"] for doc in tool_schemas(tau2_release, d))
               for d in ("airline", "retail")}
    rows = [row for row in load_corpus(pt.CORPUS) if row.id in turns]
    assert len(rows) == len(turns)
    for row in rows:
        (user,) = row.context.user
        assert user.startswith(turns[row.id]["context"]) and len(user) >= len(
            turns[row.id]["context"])
        assert row.context.tools == domains["retail" if "_retail_" in row.id else "airline"]


def test_corpus_holds_the_published_rows(tau2_release) -> None:
    assert pt.CORPUS.read_text("utf-8") == pt.rebuilt_corpus(tau2_release)
    rows = load_corpus(pt.CORPUS)
    assert sum(row.source == "published" for row in rows) == len(pt.read_jsonl(pt.TURNS))
    for turns, _, source in pt.HELDOUT_DRAWS.values():
        assert sum(row.source == source for row in rows) == len(pt.read_jsonl(turns))


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
    held2 = sp.heldout_agreement(2)
    assert (len(held2.ids), held2.agreed()) == (200, 193)
    held3 = sp.heldout_agreement(3)
    assert (len(held3.ids), held3.agreed()) == (181, 179)
    docs = " ".join((pt.DATA.parents[1] / "docs" / "history.md").read_text("utf-8").split())
    for reading in (found, held, held2, held3):
        assert sp.summary(reading) in docs


@pytest.mark.parametrize("draw", sorted(pt.HELDOUT_DRAWS))
def test_heldout_second_reading_labels_every_heldout_row(draw: int) -> None:
    path = sp.HELDOUT_SECOND_LABELS[draw]
    rows = pt.read_jsonl(path)
    assert [row["id"] for row in rows] == [
        row["id"] for row in pt.read_jsonl(pt.HELDOUT_DRAWS[draw][0])]
    assert pt.jsonl(rows) == path.read_text("utf-8")
    assert_label_rows(rows)
