"""Candidates for the labelled corpus: distinct real emissions with their provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcalib.classify.base import NO_CONTEXT, Context
from toolcalib.classify.corpus import Candidate, candidates, main, read_candidates
from toolcalib.classify.validation import Provenance, load_corpus
from toolcalib.jsonio import InputError, builtins, from_data, read_records, write_jsonl
from toolcalib.records import (
    Case,
    Emission,
    Message,
    SourceRef,
    Step,
    ToolCall,
    Trajectory,
    Turn,
    TurnTrace,
    docs_json,
)

WEIGHTS = "ab" * 32
LS = ToolCall(name="ls")


def trajectory(case_id: str, turns: list[list[Emission]], variant: str = "baseline",
               identity: dict[str, object] | None = None, dropped: tuple[int, int] = (-1, -1),
               ) -> Trajectory:
    traces = [
        TurnTrace(index=i, ended="no_call", steps=[
            Step(index=j, emission=e, dropped=(i, j) == dropped) for j, e in enumerate(steps)])
        for i, steps in enumerate(turns)
    ]
    return Trajectory(case_id=case_id, benchmark="bfcl", category="multi_turn_base", model="m",
                      model_identity=identity or {}, variant=variant, outcome="completed",
                      turns=traces, messages=[])


def case(case_id: str, requests: list[str]) -> Case:
    source = SourceRef(artifact="a", artifact_sha256="0" * 64, file="f", line=1,
                       line_sha256="0" * 64)
    turns = [Turn(index=i, messages=[Message(role="user", content=text)], gold_action="tool_call")
             for i, text in enumerate(requests)]
    return Case(id=case_id, benchmark="bfcl", category="multi_turn_base", turns=turns,
                tools_json=docs_json([{"name": "rm", "description": "", "parameters": {}}]),
                gold_action="tool_call", gold_turn=0, source=source)


def test_distinct_emissions_first_occurrence_first() -> None:
    asked = Emission(text="Which folder?")
    first = trajectory("c1", [[Emission(text="[ls()]", tool_calls=[LS], parse="ok"), asked],
                              [Emission(text="[ls(", parse="malformed")]],
                       identity={"gguf_sha256": WEIGHTS}, dropped=(1, 0))
    second = trajectory("c2", [[asked, Emission(text="", tool_calls=[LS], structured=True,
                                                parse="ok")]], variant="sri")
    cases = {("bfcl", "c1"): case("c1", ["First.", "Now list it."]),
             ("bfcl", "c2"): case("c2", ["List."])}
    found = candidates([first, second], cases)
    got = [(c.id, c.text, c.structured_calls, c.parse, c.occurrences, c.dropped, c.context.user)
           for c in found]
    assert got == [
        ("model-m-baseline-multi_turn_base-c1-t0-s0", "[ls()]", False, "ok", 1, False,
         ("First.",)),
        ("model-m-baseline-multi_turn_base-c1-t0-s1", "Which folder?", False, "none", 2, False,
         ("First.",)),
        ("model-m-baseline-multi_turn_base-c1-t1-s0", "[ls(", False, "malformed", 1, True,
         ("Now list it.",)),
        ("model-m-sri-multi_turn_base-c2-t0-s1", "", True, "ok", 1, False, ("List.",)),
    ]
    assert found[0].provenance == Provenance(
        model="m", variant="baseline", benchmark="bfcl", category="multi_turn_base", case="c1",
        turn=0, step=0, weights_sha256=WEIGHTS)
    assert found[3].provenance.weights_sha256 is None


def test_same_text_other_parse_is_another_candidate() -> None:
    found = candidates([trajectory("c1", [[Emission(text="[ls()]", tool_calls=[LS], parse="ok"),
                                           Emission(text="[ls()]")]])], {})
    assert [(c.parse, c.occurrences) for c in found] == [("ok", 1), ("none", 1)]


def test_main_writes_candidates_that_become_corpus_rows(tmp_path: Path) -> None:
    runs = tmp_path / "t.jsonl"
    write_jsonl(runs, [trajectory("c1", [[Emission(text="I cannot do that.")]],
                                  identity={"weights_sha256": WEIGHTS})])
    cases = tmp_path / "cases.jsonl"
    write_jsonl(cases, [case("c1", ["Delete it."])])
    out = tmp_path / "candidates.jsonl"
    assert main(["--trajectories", str(runs), "--cases", str(cases), "--out", str(out)]) == 0
    (only,) = read_records(out, Candidate)
    assert only.context == Context(user=("Delete it.",), tools=("rm",))
    assert only.provenance.weights_sha256 == WEIGHTS
    assert read_candidates([runs], [cases]) == [only]
    assert read_candidates([runs], [])[0].context == NO_CONTEXT  # no case read: nothing known
    labelled = {key: value for key, value in builtins(only).items()
                if key not in ("occurrences", "dropped")}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({**labelled, "label": "refuse", "reason": "r",
                                  "source": "model"}) + "\n", encoding="utf-8")
    (row,) = load_corpus(corpus)
    assert row.provenance == only.provenance and row.emission().text == "I cannot do that."
    assert row.context == only.context


def test_context_as_the_variant_presents_the_case() -> None:
    """Tools hidden by the variant are no tools offered; a turn's tools include those added up
    to it; the user of a simulated turn is the trajectory's own."""
    hidden = trajectory("c1", [[Emission(text="No tool can do that.")]],
                        variant="no-tools-visible")
    (found,) = candidates([hidden], {("bfcl", "c1"): case("c1", ["Delete it."])})
    assert found.context == Context(user=("Delete it.",), tools=())


def test_provenance_is_checked() -> None:
    where = {"model": "m", "variant": "v", "benchmark": "b", "category": "c", "case": "x",
             "turn": 0, "step": 0}
    with pytest.raises(InputError, match="field 'turn': Expected `int` >= 0"):
        from_data({**where, "turn": -1}, Provenance, "provenance")
    with pytest.raises(InputError, match="field 'weights_sha256': Expected `str` matching"):
        from_data({**where, "weights_sha256": "xyz"}, Provenance, "provenance")
