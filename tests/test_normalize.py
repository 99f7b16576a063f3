"""BFCL normalization on the real release: counts, gold classes, gold turns, clear errors."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from toolcalib.benchmarks.bfcl.normalize import (
    GORILLA_TO_OPENAPI,
    canonical_doc,
    normalize_multi_turn,
    normalize_single_turn,
)
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.benchmarks.bfcl.release import MISS_FUNC_MESSAGE
from toolcalib.jsonio import InputError

EXPECTED = {
    "multi_turn_base": (200, "tool_call"),
    "multi_turn_long_context": (200, "tool_call"),
    "multi_turn_miss_func": (200, "refuse"),
    "multi_turn_miss_param": (200, "ask"),
    "irrelevance": (240, "refuse"),
    "live_irrelevance": (884, "refuse"),
}


@pytest.fixture(scope="module")
def all_cases(bfcl_release):
    return {category: load_cases(bfcl_release, category) for category in EXPECTED}


@pytest.mark.parametrize("category", sorted(EXPECTED))
def test_counts_and_case_gold(all_cases, category):
    count, gold = EXPECTED[category]
    cases = all_cases[category]
    assert len(cases) == count
    assert {case.gold_action for case in cases} == {gold}
    assert len({case.id for case in cases}) == count
    for case in cases:
        assert case.turns[case.gold_turn].gold_action == gold
        assert case.source.file.endswith(f"BFCL_v4_{category}.json")


def test_miss_param_gold_turn_is_first_empty_turn(all_cases):
    cases = all_cases["multi_turn_miss_param"]
    assert Counter(case.gold_turn for case in cases) == {0: 81, 1: 53, 2: 33, 3: 24, 4: 6, 5: 3}
    case = next(c for c in cases if c.id == "multi_turn_miss_param_3")
    assert [len(t.gold_calls) for t in case.turns] == [1, 0, 4]
    assert case.gold_turn == 1
    assert [t.gold_action for t in case.turns] == ["tool_call", "ask", "tool_call"]


def test_miss_func_withheld_functions_arrive_at_their_turn(all_cases):
    case = all_cases["multi_turn_miss_func"][0]
    assert case.id == "multi_turn_miss_func_0"
    assert "sort" not in {doc["name"] for doc in case.tools}
    arrival = case.turns[3]
    assert [doc["name"] for doc in arrival.tools_added] == ["sort"]
    assert [m.content for m in arrival.messages] == [MISS_FUNC_MESSAGE]
    assert case.gold_turn == 2 and case.turns[2].gold_action == "refuse"
    assert arrival.gold_calls[0].name == "sort"
    # positional ground truth `sort('final_report.pdf')` is named from the function doc
    assert arrival.gold_calls[0].arguments == {"file_name": "final_report.pdf"}


def test_base_empty_turns_are_the_documented_data_quirk(all_cases):
    empty = {(c.id, t.index) for c in all_cases["multi_turn_base"] for t in c.turns
             if not t.gold_calls}
    assert empty == {("multi_turn_base_167", 4), ("multi_turn_base_180", 3),
                     ("multi_turn_base_180", 4)}
    assert all(c.gold_turn == 0 for c in all_cases["multi_turn_base"])


def test_environment_and_source(all_cases):
    case = all_cases["multi_turn_long_context"][5]
    assert case.environment["long_context"] is True
    assert case.environment["involved_classes"]
    assert case.source.artifact == "bfcl_eval-2026.3.23-py3-none-any.whl"
    assert case.source.line == 6
    assert all(c.multi_step is False and len(c.turns) == 1
               for c in all_cases["live_irrelevance"])
    assert sum(1 for c in all_cases["live_irrelevance"] if not c.tools) == 4


def _multi(lines, answers):
    return normalize_multi_turn("multi_turn_base", enumerate(lines, 1), enumerate(answers, 1),
                                lambda name: [], file="q.json", answer_file="a.json",
                                artifact="w.whl", artifact_sha256="0" * 64)


GOOD = {"id": "x_1", "question": [[{"role": "user", "content": "hi"}]],
        "initial_config": {}, "involved_classes": ["MathAPI"]}
ANSWER = {"id": "x_1", "ground_truth": [["mean(numbers=[1, 2])"]]}


def test_good_line_normalizes():
    [case] = _multi([json.dumps(GOOD)], [json.dumps(ANSWER)])
    assert case.turns[0].gold_calls[0].arguments == {"numbers": [1, 2]}


@pytest.mark.parametrize(("entry", "answer", "message"), [
    ("{not json", ANSWER, "q.json:1: not valid JSON"),
    ({**GOOD, "question": "hi"}, ANSWER, "q.json:1: field 'question': expected list"),
    ({**GOOD, "question": [[{"role": "robot", "content": "x"}]]}, ANSWER,
     "q.json:1: field 'question[0][0].role': unknown role 'robot'"),
    ({**GOOD, "involved_classes": ["Nope"]}, ANSWER,
     "q.json:1: field 'involved_classes[0]': unknown API class 'Nope'"),
    ({k: v for k, v in GOOD.items() if k != "initial_config"}, ANSWER,
     "q.json:1: field 'initial_config': missing"),
    (GOOD, {**ANSWER, "ground_truth": [["__import__('os').system('x')"]]},
     "a.json:1: field 'ground_truth[0][0]'"),
    (GOOD, {**ANSWER, "ground_truth": [[], []]}, "a.json:1: field 'ground_truth': 2 turns"),
])
def test_malformed_lines_name_file_line_and_field(entry, answer, message):
    line = entry if isinstance(entry, str) else json.dumps(entry)
    with pytest.raises(InputError) as info:
        _multi([line], [json.dumps(answer)])
    assert str(info.value).startswith(message)


def test_malformed_single_turn_line():
    bad = json.dumps({"id": "irrelevance_0", "question": [[{"role": "user", "content": "q"}]],
                      "function": [{"description": "no name"}]})
    with pytest.raises(InputError, match=r"^i.json:1: field 'function\[0\].name'"):
        normalize_single_turn("irrelevance", [(1, bad)], file="i.json", artifact="w",
                              artifact_sha256="0" * 64)


def test_source_order_survives_the_round_trip(bfcl_release, tmp_path):
    """Key order carries meaning in BFCL data: the file system roots at the first key of
    `initial_config`, and positional arguments are named by a doc's property order."""
    from toolcalib.jsonio import read_records, write_jsonl
    from toolcalib.records import Case

    raw = {}
    for _, text in bfcl_release.read_lines("BFCL_v4_multi_turn_base.json"):
        entry = json.loads(text)
        raw[entry["id"]] = entry
    cases = load_cases(bfcl_release, "multi_turn_base")
    write_jsonl(tmp_path / "cases.jsonl", cases)
    for case in read_records(tmp_path / "cases.jsonl", Case):
        config = raw[case.id]["initial_config"]
        assert json.dumps(case.environment["initial_config"]) == json.dumps(config)
    first = read_records(tmp_path / "cases.jsonl", Case)[0]
    docs = {d["name"]: d for d in bfcl_release.func_docs("GorillaFileSystem")}
    for doc in first.tools:
        if doc["name"] in docs:
            assert list(doc["parameters"]["properties"]) == list(
                docs[doc["name"]]["parameters"]["properties"])


def test_function_docs_become_canonical_json_schema_once():
    """BFCL's own type mapping, on `parameters` and `response`, nested schemas included; key
    order kept; the raw doc untouched; a canonical doc is its own canonical form."""
    raw = {"name": "place_order", "description": "d",
           "parameters": {"type": "dict", "required": ["symbol"], "properties": {
               "symbol": {"type": "string"}, "price": {"type": "float"},
               "legs": {"type": "array", "items": {"type": "dict", "properties": {
                   "weights": {"type": "tuple", "items": {"type": "float"}}}}},
               "extra": {"type": "any"}, "odd": {"type": "Frobnicator"},
               "type": {"type": "string", "enum": ["a"]}}},
           "response": {"type": "dict", "properties": {"order_id": {"type": "integer"}}}}
    before = json.dumps(raw)
    doc = canonical_doc(raw)
    assert json.dumps(raw) == before and list(doc) == list(raw)
    props = doc["parameters"]["properties"]
    assert doc["parameters"]["type"] == "object" and list(props) == list(
        raw["parameters"]["properties"])
    assert [props[k]["type"] for k in ("symbol", "price", "extra", "odd")] == [
        "string", "number", "string", "string"]
    assert props["type"] == {"type": "string", "enum": ["a"]}
    assert props["legs"]["items"] == {"type": "object", "properties": {
        "weights": {"type": "array", "items": {"type": "number"}}}}
    assert doc["response"]["type"] == "object"
    assert canonical_doc(doc) == doc


def test_cases_carry_only_json_schema_types(all_cases):
    allowed = set(GORILLA_TO_OPENAPI.values())

    def types(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "type" and isinstance(value, str):
                    yield value
                yield from types(value)
        elif isinstance(node, list):
            for item in node:
                yield from types(item)

    for cases in all_cases.values():
        for case in cases:
            docs = [*case.tools, *(doc for turn in case.turns for doc in turn.tools_added)]
            assert set(types([d["parameters"] for d in docs])) <= allowed, case.id
            assert set(types([d.get("response", {}) for d in docs])) <= allowed, case.id
