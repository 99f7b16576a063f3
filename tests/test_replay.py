"""BFCL's replay: recorded BFCL runs through our loop and scorer (`Bfcl.import_run`).

The result files under tests/data/replay are rendered from the pinned release's ground truth by
`fixture_files` (a test checks they are current; `python -m tests.test_replay` rewrites them):
`demo-prompt` and `demo-FC` in BFCL's category-folder layout, `demo-faulty` flat.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcalib import generate
from toolcalib.backends import make_backend
from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.bfcl.checker import (
    EMPTY_TURN,
    IRRELEVANCE_CALL,
    RESPONSE_MISMATCH,
    STATE_MISMATCH,
    Score,
    score_case,
)
from toolcalib.benchmarks.bfcl.gold import case_environment, gold_trace
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.benchmarks.bfcl.replay import RecordedRun, fc_emission
from toolcalib.benchmarks.bfcl.runfiles import (
    GROUPS,
    INFERENCE_ERROR,
    find_files,
    layout,
    read_results,
)
from toolcalib.config import ModelSpec, model_options
from toolcalib.execute.calls import render_call
from toolcalib.execute.textcalls import decode_emission
from toolcalib.generate import run_case, run_cases
from toolcalib.jsonio import InputError, sha256_file
from toolcalib.records import Case, ToolCall, Trajectory
from toolcalib.variants import get_variant

DATA = Path(__file__).parent / "data" / "replay"
BASELINE = get_variant("baseline")
CLOSING = "I have completed the requested operations."
ASK = "Could you tell me which file you mean?"
REFUSAL = "None of the available functions can answer this request."


def prompt_step(calls: list[ToolCall]) -> str:
    return "[" + ", ".join(render_call(call) for call in calls) + "]"


def fc_step(calls: list[ToolCall]) -> list[dict]:
    """Arguments alternate between JSON strings (OpenAI handlers) and objects (others)."""
    return [{c.name: json.dumps(c.arguments) if i % 2 == 0 else c.arguments}
            for i, c in enumerate(calls)]


def result_path(path: str | Path, model: str, category: str) -> Path:
    """Where BFCL writes a model's results for one category (`path`: its results folder)."""
    name = f"BFCL_v4_{category}_result.json"
    return Path(path) / model.replace("/", "_") / GROUPS[category] / name


def gold_turns(case: Case, step) -> list[list]:
    """What a model answering with the ground truth records: each turn's calls in one step,
    then a closing text; at abstention turns, one question."""
    return [[step(turn.gold_calls), CLOSING] if turn.gold_calls else [ASK]
            for turn in case.turns]


def tokens(turns: list[list]) -> list[list[int]]:
    return [[1000 + 10 * t + s for s in range(len(steps))] for t, steps in enumerate(turns)]


def select(release: BfclRelease) -> dict[str, list[Case]]:
    return {"multi_turn_base": load_cases(release, "multi_turn_base")[:3],
            "multi_turn_miss_param": load_cases(release, "multi_turn_miss_param")[:2],
            "irrelevance": load_cases(release, "irrelevance")[:2],
            "live_irrelevance": load_cases(release, "live_irrelevance")[:1]}


def fixture_files(release: BfclRelease) -> dict[str, str]:
    """Relative path -> content of every fixture result file (one JSON line per case, written
    as BFCL's `write` does)."""
    cases = select(release)
    base, miss = cases["multi_turn_base"], cases["multi_turn_miss_param"]
    irr, live = cases["irrelevance"], cases["live_irrelevance"]
    files: dict[str, list[dict]] = {}

    def put(model: str, category: str, lines: list[dict], flat: bool = False) -> None:
        path = result_path(".", model, category)
        files[(Path(model) / path.name if flat else path).as_posix()] = lines

    body_mass = ToolCall(name="determine_body_mass_index",
                         arguments={"weight": 70.0, "height": 1.75})
    prompt = {c.id: gold_turns(c, prompt_step) for c in base + miss}
    put("demo-prompt", "multi_turn_base", [
        {"id": c.id, "result": prompt[c.id], "input_token_count": tokens(prompt[c.id]),
         "output_token_count": tokens(prompt[c.id])} for c in base])
    put("demo-prompt", "multi_turn_miss_param", [
        {"id": c.id, "result": prompt[c.id]} for c in miss])
    put("demo-prompt", "irrelevance", [
        {"id": irr[0].id, "result": prompt_step([body_mass]), "input_token_count": 321,
         "output_token_count": 12},
        {"id": irr[1].id, "result": REFUSAL}])

    put("demo-FC", "multi_turn_base", [
        {"id": c.id, "result": gold_turns(c, fc_step)} for c in base])
    put("demo-FC", "irrelevance", [
        {"id": irr[0].id, "result": REFUSAL},
        {"id": irr[1].id, "result": [{"math.sum": json.dumps({"numbers": [1.0, 2.0]})}]}])
    put("demo-FC", "live_irrelevance", [{"id": live[0].id, "result": REFUSAL}])

    wrong = prompt[base[0].id][0][0].replace("dir_name='temp'", "dir_name='tmp'")
    assert wrong != prompt[base[0].id][0][0]
    short = [list(steps) for steps in prompt[base[1].id]]
    short[1] = []  # nothing recorded for turn 1
    short[3] = ["Let me look at the log first.", *short[3]]  # text before the call
    put("demo-faulty", "multi_turn_base", [
        {"id": base[0].id, "result": [[wrong, CLOSING], *prompt[base[0].id][1:]]},
        {"id": base[1].id, "result": short}], flat=True)  # base[2] missing
    put("demo-faulty", "irrelevance", [
        {"id": irr[0].id, "result": f"{INFERENCE_ERROR}Request timed out."}], flat=True)
    return {path: "".join(json.dumps(line) + "\n" for line in lines)
            for path, lines in files.items()}


def write_fixtures(release: BfclRelease, root: Path) -> None:
    for path, text in fixture_files(release).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


def spec(model: str | None, fmt: str | None, root: Path = DATA) -> ModelSpec:
    """A `replay` model entry (an option given None is left out)."""
    options = {"path": str(root), "model": model, "format": fmt}
    return ModelSpec(name=f"replay-{model}", backend="replay",
                     options={k: v for k, v in options.items() if v is not None})


def options(model: str | None, fmt: str | None, root: Path = DATA) -> ReplayOptions:
    return model_options(ReplayOptions, spec(model, fmt, root))


def replay(model: str, fmt: str, root: Path = DATA) -> RecordedRun:
    """A backend answering from every result file of `model` under `root`."""
    folders = layout(root, model)
    if not folders.result.is_dir():
        raise InputError(f"no folder {folders.result}")
    entries = {}
    for category, path in find_files(folders.result, "result").items():
        entries.update(read_results(path, category))
    return RecordedRun(f"replay-{model}", model, entries, {"backend": "replay", "model": model},
                       {}, fc=fmt == "fc")


def run_and_score(release: BfclRelease, case: Case,
                  backend: RecordedRun) -> tuple[Trajectory, Score]:
    trajectory = run_case(case, backend, BASELINE, lambda c: case_environment(c, release))
    gold = gold_trace(case, release) if case.multi_step else None
    return trajectory, score_case(case, trajectory, gold, release)


@pytest.fixture(scope="module")
def cases(bfcl_release):
    return select(bfcl_release)


def test_fixture_files_are_current(bfcl_release):
    expected = fixture_files(bfcl_release)
    committed = {p.relative_to(DATA).as_posix(): p.read_text(encoding="utf-8")
                 for p in DATA.rglob("*.json")}
    assert committed == expected, "run `python -m tests.test_replay` to rewrite them"
    assert sum(len(text) for text in committed.values()) < 100_000


def test_result_path_mirrors_bfcl_layout():
    assert result_path("r", "gpt-4o-2024-11-20-FC", "multi_turn_miss_func") == Path(
        "r/gpt-4o-2024-11-20-FC/multi_turn/BFCL_v4_multi_turn_miss_func_result.json")
    assert result_path("r", "org/model", "irrelevance") == Path(
        "r/org_model/non_live/BFCL_v4_irrelevance_result.json")
    assert result_path("r", "m", "live_irrelevance") == Path(
        "r/m/live/BFCL_v4_live_irrelevance_result.json")


def test_gold_prompt_replay_passes_and_irrelevance_call_fails(bfcl_release, cases):
    backend = replay("demo-prompt", "prompt")
    assert backend.cacheable is False
    for case in cases["multi_turn_base"] + cases["multi_turn_miss_param"]:
        trajectory, score = run_and_score(bfcl_release, case, backend)
        assert trajectory.outcome == "completed"
        assert score.scored and score.passed, score
        assert trajectory.model_identity == backend.identity()
    first = trajectory.turns[0].steps[0].emission
    assert not first.structured and first.parse == "ok" and first.input_tokens is None
    base_0 = run_case(cases["multi_turn_base"][0], backend, BASELINE,
                      lambda c: case_environment(c, bfcl_release))
    assert [s.emission.input_tokens for s in base_0.turns[1].steps] == [1010, 1011]
    called, refused = cases["irrelevance"]
    trajectory, score = run_and_score(bfcl_release, called, backend)
    assert score.scored and not score.passed and score.error_type == IRRELEVANCE_CALL
    assert trajectory.turns[0].steps[0].emission.output_tokens == 12
    _, score = run_and_score(bfcl_release, refused, backend)
    assert score.passed
    assert backend.divergences == [] and backend.errors == []


def test_gold_fc_replay_passes_with_structured_calls(bfcl_release, cases):
    backend = replay("demo-FC", "fc")
    for case in cases["multi_turn_base"]:
        trajectory, score = run_and_score(bfcl_release, case, backend)
        assert score.passed, score
        first = trajectory.turns[0].steps[0].emission
        assert first.structured and first.tool_calls == case.turns[0].gold_calls
    refused, called = cases["irrelevance"]
    assert run_and_score(bfcl_release, refused, backend)[1].passed
    trajectory, score = run_and_score(bfcl_release, called, backend)
    assert score.error_type == IRRELEVANCE_CALL
    assert trajectory.turns[0].steps[0].emission.tool_calls == [
        ToolCall(name="math.sum", arguments={"numbers": [1.0, 2.0]})]
    assert run_and_score(bfcl_release, cases["live_irrelevance"][0], backend)[1].passed
    assert backend.divergences == []


def test_faulty_records_fail_diverge_or_error(bfcl_release, cases):
    backend = replay("demo-faulty", "prompt")
    identity = backend.identity()
    wrong, short, missing = cases["multi_turn_base"]

    _, score = run_and_score(bfcl_release, wrong, backend)
    assert score.scored and not score.passed and score.failed_turn == 0
    assert score.error_type in (STATE_MISMATCH, RESPONSE_MISMATCH)

    trajectory, score = run_and_score(bfcl_release, short, backend)
    assert trajectory.outcome == "completed"
    assert trajectory.turns[1].steps[0].emission.text == ""
    assert score.error_type == EMPTY_TURN and score.failed_turn == 1
    kinds = [(d.case_id, d.turn, d.step, d.kind) for d in backend.divergences]
    assert kinds == [(short.id, 1, 0, "missing_step"), (short.id, 3, 1, "unconsumed_steps")]
    assert "2 recorded step(s)" in backend.divergences[1].detail

    trajectory, score = run_and_score(bfcl_release, missing, backend)
    assert trajectory.outcome == "error" and not score.scored and score.passed is None
    assert f"no record of case '{missing.id}'" in trajectory.error

    trajectory, score = run_and_score(bfcl_release, cases["irrelevance"][0], backend)
    assert trajectory.outcome == "error" and not score.scored
    assert "Request timed out." in trajectory.error and ":1:" in trajectory.error

    trajectory, _ = run_and_score(bfcl_release, cases["multi_turn_miss_param"][0], backend)
    assert trajectory.outcome == "error" and "no record of case" in trajectory.error
    assert len(backend.errors) == 3 and "Request timed out." in backend.errors[1]
    assert backend.identity() == identity

    # replaying a case again starts its divergences afresh; batching changes nothing
    list(run_cases(cases["multi_turn_base"], backend, BASELINE,
                   lambda c: case_environment(c, bfcl_release), batch_size=3))
    assert len(backend.divergences) == 2


def test_fc_outputs_decode_as_bfcl_decodes_them():
    def decoded(output):
        return decode_emission(fc_emission(output))

    ok = decoded([{"cd": '{"folder": "temp"}'}, {"ls": {"a": True}, "pwd": "{}"}])
    assert ok.structured and ok.parse == "ok" and ok.tool_calls == [
        ToolCall(name="cd", arguments={"folder": "temp"}),
        ToolCall(name="ls", arguments={"a": True}), ToolCall(name="pwd")]
    assert decoded({"cd": {"folder": "temp"}}).tool_calls == [ok.tool_calls[0]]
    for empty in ([], None, "", [{}], {}):
        emission = decoded(empty)
        assert emission.parse == "none" and emission.text == "" and not emission.tool_calls
    assert decoded("Sure, which folder?").text == "Sure, which folder?"
    assert decoded(["Sure, which folder?"]).text == "Sure, which folder?"
    mixed = decoded([{"ls": {}}, "Listing it."])
    assert mixed.text == "Listing it." and mixed.tool_calls == [ToolCall(name="ls")]
    assert not fc_emission([]).text_recorded and fc_emission([], 0).text_recorded
    for bad in ([{"cd": '{"folder": '}], [{"cd": "[1]"}], [{"cd": ["temp"]}], [{"cd": None}],
                [{"ls": {}}, 3], [{"": {}}], 7, [{"cd": '{"x": NaN}'}]):
        emission = decoded(bad)
        assert emission.parse == "malformed" and not emission.tool_calls, bad


def test_fc_text_read_as_calls_is_a_divergence(bfcl_release, cases, tmp_path):
    case = cases["irrelevance"][0]
    path = result_path(tmp_path, "m", "irrelevance")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"id": case.id, "result": "[determine_body_mass_index("
                                "weight=70.0, height=1.75)]"}) + "\n")
    backend = replay("m", "fc", tmp_path)
    run_and_score(bfcl_release, case, backend)
    assert [d.kind for d in backend.divergences] == ["text_calls"]


@pytest.mark.parametrize(("lines", "message"), [
    (['{"id": "multi_turn_base_0", "result": [["a"]]}', "{oops"],
     r"BFCL_v4_multi_turn_base_result.json:2: not valid JSON"),
    (['{"result": [["a"]]}'], r":1: field 'id': expected a string"),
    (['{"id": "multi_turn_base_0"}'], r":1: field 'result': missing"),
    (['{"id": "multi_turn_base_0", "result": [["a"], "b"]}'],
     r":1: field 'result\[1\]': expected a list"),
    (['{"id": "multi_turn_base_0", "result": 3}'], r":1: field 'result': expected a list"),
    (['{"id": "irrelevance_0", "result": [["a"]]}'], r"'irrelevance_0' is not a multi_turn_base"),
    (['{"id": "multi_turn_base_0", "result": []}'] * 2, r":2: field 'id': .* already on line 1"),
    (["[1]"], r":1: field '<record>': expected an object"),
])
def test_malformed_files_fail_when_read(tmp_path, lines, message):
    path = result_path(tmp_path, "m", "multi_turn_base")
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=message):
        replay("m", "prompt", tmp_path)


def test_import_run_is_the_replay_through_bfcls_loop(bfcl_release, cases):
    """`import_run` answers the given cases from the record under `baseline`: the trajectories
    `run_cases` gives (each with its record), the run's identity (files and release), one note
    per divergence and per error."""
    bench = get_benchmark("bfcl")
    source = str(bfcl_release.wheel)
    given = cases["multi_turn_base"]
    imported = bench.import_run(source, options("demo-faulty", "prompt"), "replay-demo-faulty",
                                "multi_turn_base", given, {}, generate.replay)
    backend = replay("demo-faulty", "prompt")
    expected = list(run_cases(given, backend, BASELINE,
                              lambda c: case_environment(c, bfcl_release)))
    assert imported.cases == given
    assert [t.replace(published=None, model_identity={}) for t in imported.trajectories[:2]] \
        == [t.replace(model_identity={}) for t in expected[:2]]
    assert [t.outcome for t in imported.trajectories] == ["completed", "completed", "error"]
    assert imported.identity == imported.trajectories[0].model_identity
    assert imported.identity["files"] == {
        f"demo-faulty/{name}": sha256_file(DATA / "demo-faulty" / name)
        for name in ("BFCL_v4_irrelevance_result.json", "BFCL_v4_multi_turn_base_result.json")}
    assert imported.identity["release"] == {"artifact": bfcl_release.wheel.name,
                                            "sha256": sha256_file(bfcl_release.wheel)}
    _, short, missing = given
    assert [r.case_id for r in imported.records] == [t.case_id for t in imported.trajectories[:2]]
    assert imported.summary["source"] == "no score file"
    assert imported.notes[0] == f"{missing.id}: excluded, no record in " \
                                "demo-faulty/BFCL_v4_multi_turn_base_result.json"
    assert imported.notes[1].startswith(f"{short.id} turn 1 step 0: missing_step: ")
    assert imported.notes[2].startswith(f"{short.id} turn 3 step 1: unconsumed_steps: ")
    assert f"'{missing.id}' excluded: no record" in imported.notes[3]

    clean = bench.import_run(source, options("demo-FC", "fc"), "replay-demo-FC", "irrelevance",
                             cases["irrelevance"], {}, generate.replay)
    assert [t.outcome for t in clean.trajectories] == ["completed", "completed"]
    assert clean.notes == []


def test_bad_options_and_layouts_fail_at_import(bfcl_release, cases, tmp_path):
    def run(model, fmt, root=DATA, category="multi_turn_base"):
        return get_benchmark("bfcl").import_run(str(bfcl_release.wheel),
                                                options(model, fmt, root), f"replay-{model}",
                                                category, cases[category], {},
                                                generate.replay)

    with pytest.raises(ValueError, match="format"):
        options("demo-FC", "xml")
    with pytest.raises(InputError, match="model 'replay-None': option 'model' .*required"):
        run(None, "fc")
    with pytest.raises(InputError, match="backend 'replay' imports a published run"):
        make_backend(spec("demo-FC", "fc"))
    with pytest.raises(InputError, match="no folder"):
        run("absent", "prompt")
    with pytest.raises(InputError, match=r"result\[0\]\[0\]': expected a string \(format "
                                         r"'prompt'\)"):
        run("demo-FC", "prompt")
    (tmp_path / "m" / "multi_turn").mkdir(parents=True)
    with pytest.raises(InputError, match="no BFCL_v3/v4 result file"):
        run("m", "prompt", tmp_path)
    for path in (result_path(tmp_path, "m", "multi_turn_base"),
                 tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json"):
        path.write_text('{"id": "multi_turn_base_0", "result": []}\n')
    with pytest.raises(InputError, match="two result files for category 'multi_turn_base'"):
        run("m", "prompt", tmp_path)


if __name__ == "__main__":
    from tests.conftest import BFCL_FILE, ROOT
    write_fixtures(BfclRelease(ROOT / "results" / "raw" / "bfcl" / BFCL_FILE), DATA)


def test_result_groups_are_the_bfcl_plugins_categories():
    """BFCL's replay runs exactly the BFCL plugin's categories, grouped as BFCL does."""
    from toolcalib.benchmarks.bfcl.normalize import MULTI_TURN

    assert tuple(GROUPS) == get_benchmark("bfcl").categories
    assert tuple(c for c, group in GROUPS.items() if group == "multi_turn") == MULTI_TURN
