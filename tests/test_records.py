"""Records: what a stage writes, the next reads back equal (lines laid out otherwise too), and
a bad line names its file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import yaml

from tests.test_classify_paper import make_trajectory
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.classify.base import DATA_DIR, packaged_yaml
from toolcalib.jsonio import InputError, dumps, parse_line, read_records, write_jsonl
from toolcalib.records import (
    Case,
    Emission,
    Intervention,
    Step,
    ToolCall,
    Trajectory,
    TurnTrace,
    docs_json,
)


@pytest.fixture(scope="module")
def cases(bfcl_release) -> list[Case]:
    return [case for category in ("multi_turn_miss_func", "multi_turn_long_context",
                                  "live_irrelevance")
            for case in load_cases(bfcl_release, category)[:40]]


def trajectory(decoy: bool = False, arguments: dict | None = None) -> Trajectory:
    """Every kind of step; `decoy`: a call argument named like a record's fields."""
    arguments = arguments or {"folder": "a", **({"messages": ["x"], "tools": 1} if decoy else {})}
    calls = [ToolCall(name="cd", arguments=arguments)]
    run = make_trajectory([[Emission(text="", tool_calls=calls, structured=True, parse="ok"),
                            Emission(text="Done.", input_tokens=3)],
                           [Emission(text="?", parse="malformed", parse_error="bad")]])
    return run.replace(interventions=[
        Intervention(turn=0, step=1, probe="sri", fired=True, reason="halt")])


def test_cases_read_back_as_written(cases) -> None:
    assert any(turn.tools_added for case in cases for turn in case.turns)
    for case in cases:
        read = parse_line(dumps(case) + "\n", Case, "cases.jsonl", 1)
        assert read == case and dumps(read) == dumps(case)
        assert read.tools == case.tools == json.loads(dumps(case))["tools"]


def test_trajectories_read_back_as_written() -> None:
    for run in (trajectory(), trajectory(decoy=True)):
        read = parse_line(dumps(run), Trajectory, "runs.jsonl", 1)
        assert read == run and dumps(read) == dumps(run)
    assert read.turns[0].steps[0].emission.tool_calls[0].arguments == \
        {"folder": "a", "messages": ["x"], "tools": 1}


def test_lines_laid_out_otherwise_read_the_same(cases) -> None:
    for record, model in ((cases[0], Case), (trajectory(), Trajectory)):
        text = dumps(record)
        for other in (json.dumps(json.loads(text), sort_keys=True),  # another key order
                      json.dumps(json.loads(text), indent=1)):         # spaces and newlines
            read = parse_line(other.replace("\n", " "), model, "x", 1)
            assert json.loads(dumps(read)) == json.loads(text)
            if model is Trajectory:
                assert read == record


def test_numbers_json_holds_and_msgspec_does_not(tmp_path: Path) -> None:
    """Beyond 64 bits, and NaN (written `null`, as records always were): read as `json` does."""
    run = trajectory(arguments={"big": 10**30, "small": -(10**25), "x": 1.5})
    assert parse_line(dumps(run), Trajectory, "runs.jsonl", 1) == run
    nan = trajectory(arguments={"x": float("nan")})
    assert '"arguments":{"x":null}' in dumps(nan)
    text = dumps(run).replace('"x":1.5', '"x":NaN')
    read = parse_line(text, Trajectory, "runs.jsonl", 1)
    value = read.turns[0].steps[0].emission.tool_calls[0].arguments["x"]
    assert value != value
    case = parse_line(dumps(make_case_with_docs([{"name": "f", "default": 10**30}])), Case, "c", 1)
    assert case.tools == [{"name": "f", "default": 10**30}]


def make_case_with_docs(docs: list) -> Case:
    from tests.test_classify_paper import make_case

    return make_case(["ask"], 0).replace(tools_json=docs_json(docs))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t["turns"][0]["steps"][1]["emission"].update(parse="odd"),
     r"runs.jsonl:2: field 'turns.0.steps.1.emission.parse': Invalid enum value 'odd'"),
    (lambda t: t["turns"][1]["steps"][0].update(extra=1),
     r"runs.jsonl:2: field 'turns.1.steps.0.extra': Object contains unknown field `extra`"),
    (lambda t: t.update(extra=1), r"runs.jsonl:2: field 'extra': Object contains unknown field"),
    (lambda t: t["turns"][0]["steps"][0]["emission"]["tool_calls"][0].pop("name"),
     r"field 'turns.0.steps.0.emission.tool_calls.0.name': Object missing required field `name`"),
    (lambda t: t["turns"][0].update(index="0"),
     r"field 'turns.0.index': Expected `int`, got `str` \(in Trajectory\)"),
    (lambda t: t["interventions"][0].update(fired=1),
     r"field 'interventions.0.fired': Expected `bool`, got `int`"),
    (lambda t: t["turns"][0]["steps"][0]["emission"]["tool_calls"][0].update(arguments=[10**30]),
     r"field 'turns.0.steps.0.emission.tool_calls.0.arguments': Expected `object`, got `array`"),
])
def test_a_bad_trajectory_line_names_file_line_and_field(tmp_path: Path, edit, message) -> None:
    raw = json.loads(dumps(trajectory()))
    edit(raw)
    path = tmp_path / "runs.jsonl"
    path.write_text("\n" + json.dumps(raw, separators=(",", ":"), ensure_ascii=False) + "\n")
    with pytest.raises(InputError, match=message):
        read_records(path, Trajectory)


def test_a_bad_line_is_one_message(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(dumps(trajectory())[:-1] + "\n")
    with pytest.raises(InputError, match=r"^.*runs.jsonl:1: not valid JSON \(.*column \d+\)$"):
        read_records(path, Trajectory)
    path.write_text("[1]\n")
    with pytest.raises(InputError, match=r"runs.jsonl:1: field '<record>': Expected `object`"):
        read_records(path, Trajectory)


def test_a_record_built_wrong_is_not_written(tmp_path: Path) -> None:
    """msgspec does not check what a record is built with: `write_jsonl` reads each line back."""
    bad = Emission(text="x", parse="odd")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"being written\): field 'parse': Invalid enum value"):
        write_jsonl(tmp_path / "out.jsonl", [Emission(), bad])
    assert not (tmp_path / "out.jsonl").exists()


def test_a_case_with_bad_docs_names_them() -> None:
    case = make_case_with_docs([]).replace(tools_json=msgspec.Raw(b'{"name": "f"}'))
    with pytest.raises(InputError, match=r"case c1: field 'tools': Expected `array`"):
        assert case.tools


def test_packaged_yaml_loads_as_safe_load() -> None:
    for path in sorted(DATA_DIR.glob("*.yaml")):
        assert packaged_yaml(path.name) == yaml.safe_load(path.read_text("utf-8")), path.name


def test_step_defaults_are_the_records_defaults() -> None:
    step = Step(index=0, emission=Emission())
    assert parse_line('{"index": 0, "emission": {}}', Step, "x", 1) == step
    assert TurnTrace(index=0, steps=[step], ended="no_call").steps[0].results == []


def test_fields_of_one_benchmark_are_left_out_at_their_default() -> None:
    """τ²'s fields (`omitted_at_default`) appear in a line only when set: BFCL's lines keep
    their bytes; set, they read back."""
    run = trajectory()
    text = dumps(run)
    assert all(f'"{name}"' not in text for name in ("termination", "user_identity", "user"))
    user_turn = run.turns[0].replace(user="Hi, I need help.")
    tau = run.replace(termination="user_stop", user_identity={"user": "reference"},
                      turns=[user_turn, *run.turns[1:]])
    tau_text = dumps(tau)
    assert tau_text.endswith(',"termination":"user_stop","user_identity":{"user":"reference"}}')
    assert '"ended":"no_call","user":"Hi, I need help."}' in tau_text
    assert parse_line(tau_text, Trajectory, "runs.jsonl", 1) == tau
    case = make_case_with_docs([])
    assert '"open_turns"' not in dumps(case) and '"gold_rule"' not in dumps(case)
    tau_case = case.replace(open_turns=True, gold_rule="withheld")
    assert '"multi_step":true,"open_turns":true,"gold_rule":"withheld","source":' in dumps(tau_case)
    assert parse_line(dumps(tau_case), Case, "cases.jsonl", 1) == tau_case
