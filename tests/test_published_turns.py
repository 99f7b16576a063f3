"""The published-turns corpus rebuilds to its committed bytes (`tests.published_turns`)."""

from __future__ import annotations

from tests import published_turns as pt


def test_sample_rebuilds_to_the_committed_bytes() -> None:
    assert pt.jsonl([t.row() for t in pt.sampled(pt.ROUNDS)]) == pt.TURNS.read_text("utf-8")
    assert pt.jsonl(pt.second_pass(pt.sampled({}))) == pt.SECOND_PASS.read_text("utf-8")


def test_turn_ids_are_unique_and_name_file_simulation_and_message() -> None:
    turns = pt.population()
    assert len({t.id for t in turns}) == len(turns)
    stems = {t.file.rsplit("/", 1)[-1].removesuffix(".json") for t in turns}
    assert {t.id.split(":")[0] for t in turns} == stems
    assert all(t.text != pt.GREETING or t.calls for t in turns if t.id.endswith(":0"))
