"""Published τ²-bench runs (`benchmarks/tau2/published.py`) on trimmed copies of the four
shipped files: each defect the files carry, a reward the scorer contradicts, other shapes.

Each trimmed copy keeps the file's `info` and only the simulations a test needs (and their
tasks), so a test reads and re-executes a few dialogues, not hundreds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.tau2.published import (
    EXCLUDED,
    import_category,
    read_run,
)
from toolcalib.jsonio import InputError, read_records
from toolcalib.metrics.published import file_lines, published_table
from toolcalib.records import Case, Trajectory

ROOT = Path(__file__).resolve().parents[1] / "data" / "published" / "tau2"
CLAUDE = "claude-sonnet-4-5/claude-sonnet-4-5_aide-platform_2025-10-31__claude-sonnet-4-5_" \
         "airline_default_gpt4.1_1trials.json"
GPT_OSS = "gpt-oss-120b/gpt-oss-120b_openai_2025-11-26__langchain_agent_airline_2025-11-26_" \
          "00-37-06.json"
ORCH_AIRLINE = "toolorchestra/toolorchestra_nvidia_2025-12-02__toolorchestra_airline_gpt-5_" \
               "1trial.json"
ORCH_RETAIL = "toolorchestra/toolorchestra_nvidia_2025-12-02__toolorchestra_retail_gpt-5_" \
              "1trial.json"


def _load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / name).read_text(encoding="utf-8"))


def trimmed(tmp_path: Path, name: str, keep: list[int], edit: Any = None) -> Path:
    """A copy of a shipped file with simulations `keep` (by position), `edit` applied."""
    data = _load(name)
    data["simulations"] = [data["simulations"][i] for i in keep]
    if edit is not None:
        edit(data)
    out = tmp_path / Path(name).name
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def by_case(imported: Any) -> dict[str, Trajectory]:
    return {t.case_id: t for t in imported.trajectories}


def test_a_clean_run_imports_every_simulation_as_a_trial_unit(tmp_path, tau2_release):
    path = trimmed(tmp_path, CLAUDE, [0, 1])
    imported = import_category(path, tau2_release, "claude", "airline", "none")
    assert [c.id for c in imported.cases] == ["airline_3:trial0", "airline_13:trial0"]
    trajectory = by_case(imported)["airline_3:trial0"]
    assert trajectory.outcome == "completed" and trajectory.termination == "user_stop"
    assert trajectory.published.claimed_case == "3" and trajectory.published.differences == []
    assert trajectory.published.recorded["reward"] == 1.0
    assert trajectory.messages[0].content == "Hi! How can I help you today?"
    calls = [s for turn in trajectory.turns for s in turn.steps if s.emission.tool_calls]
    assert calls and all(s.emission.structured and s.results for s in calls)
    assert imported.identity["files"] == {path.name: read_run(path).sha256}
    assert imported.identity["agent"] == ["claude-sonnet-4-5"]


def test_two_trials_of_one_task_stay_apart(tmp_path, tau2_release):
    def second_trial(data: dict[str, Any]) -> None:
        again = copy.deepcopy(data["simulations"][0])
        again["trial"] = 1
        data["simulations"].append(again)

    path = trimmed(tmp_path, CLAUDE, [1], second_trial)
    imported = import_category(path, tau2_release, "claude", "airline", "none")
    assert [c.id for c in imported.cases] == ["airline_3:trial0", "airline_3:trial1"]


def test_contradicted_task_ids_are_excluded_by_default_and_paired_on_request(
        tmp_path, tau2_release):
    path = trimmed(tmp_path, ORCH_AIRLINE, [0, 10, 11])
    strict = import_category(path, tau2_release, "orch", "airline", "none")
    excluded = by_case(strict)["airline_0:trial0"]
    assert excluded.outcome == "error" and excluded.error.startswith(EXCLUDED)
    assert "task 27's actions" in excluded.error
    # task 10 has no reference action and its record checks none: nothing contradicts it
    assert by_case(strict)["airline_10:trial0"].outcome == "completed"
    score = get_benchmark("tau2").score(str(tau2_release.wheel), strict.cases[0], excluded, {})
    assert not score.scored

    paired = import_category(path, tau2_release, "orch", "airline", "evidence")
    assert "airline_27:trial0" in by_case(paired)
    evidence = by_case(paired)["airline_27:trial0"].published.pairing
    assert "paired with task '27'" in evidence and "identifiers in the dialogue" in evidence
    assert by_case(paired)["airline_27:trial0"].outcome == "completed"


def test_no_task_id_and_no_termination_are_named_not_assumed(tmp_path, tau2_release):
    path = trimmed(tmp_path, ORCH_RETAIL, [0, 1])
    strict = import_category(path, tau2_release, "orch", "retail", "none")
    assert strict.cases == [] and [r.case_id for r in strict.records] == [None, None]
    assert all(r.excluded == "no task_id recorded" for r in strict.records)
    assert all("no cell" in note for note in strict.notes)

    paired = import_category(path, tau2_release, "orch", "retail", "evidence")
    assert len(paired.cases) == 2
    for trajectory in paired.trajectories:
        assert trajectory.published.termination.startswith("termination_reason missing")
        assert "trial 0 (not recorded" in trajectory.published.pairing
        assert trajectory.termination == "user_stop"


def test_a_result_that_replays_differently_is_named_and_the_import_goes_on(
        tmp_path, tau2_release):
    data = _load(GPT_OSS)
    index = next(i for i, s in enumerate(data["simulations"]) if s["task_id"] == "8")
    path = trimmed(tmp_path, GPT_OSS, [index, 11])
    imported = import_category(path, tau2_release, "gpt-oss", "airline", "none")
    differences = by_case(imported)["airline_8:trial0"].published.differences
    assert differences and "differs only in a URL" in differences[0]
    assert any("result differs" in note for note in imported.notes)
    capped = by_case(imported)["airline_10:trial0"]
    assert capped.outcome == "step_cap" and capped.termination == "max_steps"


def test_a_recorded_reward_the_scorer_contradicts_is_kept_with_its_cause(
        tmp_path, tau2_release):
    def flip(data: dict[str, Any]) -> None:
        info = data["simulations"][0]["reward_info"]
        info["reward"], info["reward_breakdown"]["DB"] = 0.0, 0.0
        info["db_check"]["db_match"] = False

    path = trimmed(tmp_path, CLAUDE, [1], flip)
    imported = import_category(path, tau2_release, "claude", "airline", "none")
    case, trajectory = imported.cases[0], imported.trajectories[0]
    bench = get_benchmark("tau2")
    gold = bench.gold(str(tau2_release.wheel), case)
    score = bench.score(str(tau2_release.wheel), case, trajectory, gold)
    assert score.passed and score.details["recorded_reward"] == 0.0
    assert score.details["reward_disagreement"].startswith("DB: recorded 0, recomputed 1; "
                                                           "writes made:")


def test_agent_stop_with_calls_runs_none_of_them(tmp_path, tau2_release):
    def stop(data: dict[str, Any]) -> None:
        messages = data["simulations"][0]["messages"]
        at = next(i for i, m in enumerate(messages) if m["role"] == "assistant"
                  and m.get("tool_calls"))
        messages[at]["content"] = "Done. ###STOP###"
        del messages[at + 1:]
        data["simulations"][0]["termination_reason"] = "agent_stop"

    path = trimmed(tmp_path, CLAUDE, [1], stop)
    trajectory = import_category(path, tau2_release, "c", "airline", "none").trajectories[0]
    last = trajectory.turns[-1].steps[-1]
    assert last.emission.tool_calls and last.results == []
    assert trajectory.messages[-1].role == "assistant"
    assert trajectory.termination == "agent_stop"


@pytest.mark.parametrize("content, expected", [
    ("[]", "a JSON list of 0 items, expected an object with keys 'info', 'tasks'"),
    ('{"domain": "airline", "agent": "x", "pass_rate": 0.5}',
     "keys agent, domain, pass_rate (no info, tasks, simulations), expected an object"),
    ('{"info": {}, "tasks": [], "simulations": [{"mess', "not a complete JSON document"),
])
def test_a_file_of_another_shape_stops_with_one_line(tmp_path, content, expected):
    path = tmp_path / "run.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_run(path)
    assert str(error.value).startswith(f"{path}: ") and expected in str(error.value)
    assert "\n" not in str(error.value)


def test_a_policy_other_than_the_pinned_releases_stops(tmp_path, tau2_release):
    def other(data: dict[str, Any]) -> None:
        data["info"]["environment_info"]["policy"] += "\nA revised rule."

    path = trimmed(tmp_path, CLAUDE, [0], other)
    with pytest.raises(InputError, match="not the pinned release's airline policy"):
        import_category(path, tau2_release, "c", "airline", "none")


def test_the_stage_writes_nothing_for_a_bad_file(tmp_path, tau2_wheel):
    from toolcalib.cli import main

    bad = tmp_path / "runs"
    bad.mkdir()
    (bad / "summary.json").write_text('{"domain": "airline", "pass_rate": 0.4}')
    outs = [tmp_path / f"{name}.jsonl" for name in ("t", "c", "r", "h")]
    for out in outs:
        out.write_text("stale")
    spec = json.dumps({"name": "pub", "backend": "replay", "options": {"path": str(bad)}})
    status = main(["import-run", "--model-spec", spec, "--benchmark", "tau2", "--category",
                   "airline", "--source", str(tau2_wheel), "--out", str(outs[0]),
                   "--out-cases", str(outs[1]), "--out-records", str(outs[2]),
                   "--out-recorded", str(outs[3])])
    assert status == 2 and not any(out.exists() for out in outs)


def test_import_then_evaluate_gives_the_published_table_and_agreement_line(
        tmp_path, tau2_wheel):
    from toolcalib.cli import main
    from toolcalib.metrics.inputs import read_table
    from toolcalib.metrics.per_case import CASE_SCHEMA
    from toolcalib.metrics.published import RECORD_SCHEMA

    def flip(data: dict[str, Any]) -> None:
        info = data["simulations"][1]["reward_info"]
        info["reward"], info["reward_breakdown"]["DB"] = 0.0, 0.0

    folder = tmp_path / "claude"
    folder.mkdir()
    trimmed(folder, CLAUDE, [1, 2], flip)
    out = {name: tmp_path / f"{name}.jsonl" for name in
           ("t", "c", "r", "h", "g", "a", "s", "pc")}
    spec = json.dumps({"name": "pub", "backend": "replay", "options": {"path": str(folder)}})
    assert main(["import-run", "--model-spec", spec, "--benchmark", "tau2", "--category",
                 "airline", "--source", str(tau2_wheel), "--out", str(out["t"]),
                 "--out-cases", str(out["c"]), "--out-records", str(out["r"]),
                 "--out-recorded", str(out["h"])]) == 0
    assert main(["gold", "--benchmark", "tau2", "--cases", str(out["c"]), "--source",
                 str(tau2_wheel), "--out", str(out["g"])]) == 0
    assert main(["evaluate", "--profile", "default", "--benchmark", "tau2", "--source",
                 str(tau2_wheel), "--cases", str(out["c"]), "--gold", str(out["g"]),
                 "--trajectories", str(out["t"]), "--actions", str(out["a"]), "--scores",
                 str(out["s"]), "--per-case", str(out["pc"]),
                 "--triples", str(tmp_path / "triples.csv")]) == 0
    assert len(read_records(out["t"], Trajectory)) == 2
    table = published_table([read_table(out["r"], RECORD_SCHEMA)],
                            read_table(out["pc"], CASE_SCHEMA))
    assert table["status"].to_list() == ["scored", "scored"]
    assert table["agrees"].to_list() == [True, False]
    assert table["note"].to_list()[1].startswith("DB: recorded")
    line, = file_lines(table)
    assert "2 records, 2 scored, 0 excluded" in line and "agree on 1 of 2" in line


def test_replay_options_name_a_file_or_folder():
    assert ReplayOptions(path="x.json").pairing == "none"
    with pytest.raises(ValueError):
        ReplayOptions(path="x", pairing="guess")


def test_gold_of_an_embedded_release_task_is_the_releases_row(tmp_path, tau2_wheel,
                                                               tau2_release):
    """The `gold` stage takes the release's row for a task the file embeds unchanged (as τ²
    reads tasks: the file writes out optional fields the release omits), executes a changed
    one, and both give the bytes executing every case gives."""
    from toolcalib.cli import main

    def change(data: dict[str, Any]) -> None:
        task = next(t for t in data["tasks"] if t["id"] == "13")
        task["initial_state"] = {"initialization_actions": [{
            "env_type": "assistant", "func_name": "cancel_reservation",
            "arguments": {"reservation_id": "Z7GOZK"}}]}

    folder = tmp_path / "claude"
    folder.mkdir()
    trimmed(folder, CLAUDE, [0, 1], change)
    spec = json.dumps({"name": "pub", "backend": "replay", "options": {"path": str(folder)}})
    files = {name: str(tmp_path / f"{name}.jsonl") for name in
             ("t", "c", "r", "h", "release", "known", "reused", "executed")}
    assert main(["import-run", "--model-spec", spec, "--benchmark", "tau2", "--category",
                 "airline", "--source", str(tau2_wheel), "--out", files["t"],
                 "--out-cases", files["c"], "--out-records", files["r"],
                 "--out-recorded", files["h"]]) == 0
    pinned = {c.id: c.environment["pinned_task"] for c in read_records(files["c"], Case)}
    assert pinned == {"airline_3:trial0": True, "airline_13:trial0": False}
    assert main(["normalize", "--benchmark", "tau2", "--category", "airline", "--source",
                 str(tau2_wheel), "--out", files["release"]]) == 0
    release = [line for line in Path(files["release"]).read_text().splitlines()
               if json.loads(line)["id"] in {"airline_3", "airline_13"}]
    Path(files["release"]).write_text("\n".join(release) + "\n")
    common = ["gold", "--benchmark", "tau2", "--source", str(tau2_wheel)]
    assert main([*common, "--cases", files["release"], "--out", files["known"]]) == 0
    assert main([*common, "--cases", files["c"], "--out", files["executed"]]) == 0
    assert main([*common, "--cases", files["c"], "--known-cases", files["release"],
                 "--known", files["known"], "--out", files["reused"]]) == 0
    assert Path(files["reused"]).read_bytes() == Path(files["executed"]).read_bytes()
    bench = get_benchmark("tau2")
    keys = {c.id: bench.gold_key(str(tau2_wheel), c) for c in read_records(files["c"], Case)}
    known = {bench.gold_key(str(tau2_wheel), c) for c in read_records(files["release"], Case)}
    assert {case for case, key in keys.items() if key in known} == {"airline_3:trial0"}
