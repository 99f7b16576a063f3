"""Plain views: what `evaluate` reads without pydantic equals what the records hold, lines laid
out otherwise read the same, and bad lines name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.test_classify_paper import make_trajectory
from toolcalib.benchmarks.bfcl import load_cases
from toolcalib.classify.base import DATA_DIR, packaged_yaml
from toolcalib.jsonio import InputError, dumps, read_records
from toolcalib.records import Case, Emission, Intervention, Step, ToolCall, Trajectory, TurnTrace
from toolcalib.views import (
    CallView,
    CaseView,
    EmissionView,
    StepView,
    TrajectoryView,
    TurnTraceView,
    TurnView,
    laid_out,
    parse_checked,
    view_check,
)


def same_fields(view: object, record: object) -> None:
    """Every field of the view equals the record's (views nested in lists field by field)."""
    for name in type(view).__slots__:
        mine, theirs = getattr(view, name), getattr(record, name)
        if isinstance(mine, list) and mine and hasattr(mine[0], "__slots__"):
            assert len(mine) == len(theirs)
            for a, b in zip(mine, theirs, strict=True):
                same_fields(a, b)
        elif hasattr(mine, "__slots__"):
            same_fields(mine, theirs)
        else:
            assert mine == theirs, name


@pytest.fixture(scope="module")
def cases(bfcl_release) -> list[Case]:
    return [case for category in ("multi_turn_miss_func", "multi_turn_long_context",
                                  "live_irrelevance")
            for case in load_cases(bfcl_release, category)[:40]]


def trajectory(decoy: bool = False) -> Trajectory:
    """Every kind of step; `decoy`: a call argument named like the field a view cuts out."""
    arguments = {"folder": "a", **({"messages": ["x"], "tools": 1} if decoy else {})}
    calls = [ToolCall(name="cd", arguments=arguments)]
    run = make_trajectory([[Emission(text="", tool_calls=calls, structured=True, parse="ok"),
                            Emission(text="Done.", input_tokens=3)],
                           [Emission(text="?", parse="malformed", parse_error="bad")]])
    return run.model_copy(update={"interventions": [
        Intervention(turn=0, step=1, probe="sri", fired=True, reason="halt")]})


def test_case_views_hold_the_records_fields(cases) -> None:
    assert any(turn.tools_added for case in cases for turn in case.turns)
    for case in cases:
        view = parse_checked(dumps(case) + "\n", CaseView, "cases.jsonl:1")
        assert laid_out(dumps(case) + "\n", CaseView) is not None  # read without its docs
        same_fields(view, case)
        assert view == view_check(CaseView, fast=False)(json.loads(dumps(case)))


def test_trajectory_views_hold_the_records_fields() -> None:
    run = trajectory()
    view = parse_checked(dumps(run), TrajectoryView, "runs.jsonl:1")
    assert laid_out(dumps(run), TrajectoryView) is not None
    same_fields(view, run)
    raw = json.loads(dumps(run))
    assert view == view_check(TrajectoryView, fast=False)(raw)
    for cls, part in [(TurnTraceView, raw["turns"][0]), (StepView, raw["turns"][0]["steps"][0]),
                      (EmissionView, raw["turns"][0]["steps"][0]["emission"]),
                      (CallView, raw["turns"][0]["steps"][0]["emission"]["tool_calls"][0]),
                      (TurnView, {"index": 1, "gold_action": "ask", "gold_calls": []})]:
        assert cls.fast(part) == view_check(cls, fast=False)(part) is not None


def test_lines_laid_out_otherwise_read_the_same(cases) -> None:
    case, run = cases[0], trajectory()
    for record, view in ((case, CaseView), (run, TrajectoryView)):
        text = dumps(record)
        for other in (json.dumps(json.loads(text), sort_keys=True),  # another key order
                      json.dumps(json.loads(text), indent=1)):         # spaces and newlines
            assert laid_out(other.replace("\n", " "), view) is None
            assert parse_checked(other.replace("\n", " "), view, "x:1") == \
                parse_checked(text, view, "x:1")


def test_a_key_inside_a_value_does_not_cut_the_line(cases) -> None:
    """A cut starts at the first `,"messages":`; one inside an earlier value is found out."""
    run = trajectory(decoy=True)
    text = dumps(run)
    assert text.index(',"messages":') < text.rindex(',"messages":')  # the call's argument first
    assert laid_out(text, TrajectoryView) is None
    assert parse_checked(text, TrajectoryView, "x:1").turns[0].steps[0].emission.tool_calls[0] \
        .arguments == {"folder": "a", "messages": ["x"], "tools": 1}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t["turns"][0]["steps"][1]["emission"].update(parse="odd"),
     r"runs.jsonl:2: field 'turns.0.steps.1.emission.parse': Input should be 'none', 'ok' or"),
    (lambda t: t["turns"][1]["steps"][0].update(extra=1),
     r"runs.jsonl:2: field 'turns.1.steps.0.extra': Extra inputs are not permitted"),
    (lambda t: t["turns"][0]["steps"][0]["emission"]["tool_calls"][0].pop("name"),
     r"field 'turns.0.steps.0.emission.tool_calls.0.name': Field required"),
    (lambda t: t["turns"][0].update(index="0"),
     r"field 'turns.0.index': Input should be a valid integer"),
    (lambda t: t["interventions"][0].update(fired=1),
     r"field 'interventions.0.fired': Input should be a valid boolean"),
])
def test_a_bad_trajectory_line_names_file_line_and_field(tmp_path: Path, edit, message) -> None:
    raw = json.loads(dumps(trajectory()))
    edit(raw)
    path = tmp_path / "runs.jsonl"
    path.write_text("\n" + json.dumps(raw, separators=(",", ":"), ensure_ascii=False) + "\n")
    with pytest.raises(InputError, match=message):
        read_records(path, TrajectoryView)


def test_packaged_yaml_loads_as_safe_load() -> None:
    for path in sorted(DATA_DIR.glob("*.yaml")):
        assert packaged_yaml(path.name) == yaml.safe_load(path.read_text("utf-8")), path.name


def test_view_step_defaults_match_the_records() -> None:
    step = Step(index=0, emission=Emission())
    view = view_check(StepView)({"index": 0, "emission": {}})
    same_fields(view, step)
    assert TurnTrace(index=0, steps=[step], ended="no_call").steps[0].results == view.results
