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

import polars as pl
import pytest

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.tau2.published import EXCLUDED, import_category
from toolcalib.benchmarks.tau2.results import read_run
from toolcalib.jsonio import InputError, from_data, read_records
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.published import RECORD_SCHEMA, file_lines, published_table, record_rows
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
    imported = import_category(path, tau2_release, "claude", "airline", "content")
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
    imported = import_category(path, tau2_release, "claude", "airline", "content")
    assert [c.id for c in imported.cases] == ["airline_3:trial0", "airline_3:trial1"]


def test_a_label_the_checks_contradict_is_paired_by_content_or_excluded_in_label_mode(
        tmp_path, tau2_release):
    path = trimmed(tmp_path, ORCH_AIRLINE, [0, 10, 11])
    paired = import_category(path, tau2_release, "orch", "airline", "content")
    assert [c.id for c in paired.cases] == ["airline_1:trial0", "airline_10:trial0",
                                            "airline_27:trial0"]
    evidence = by_case(paired)["airline_27:trial0"].published.pairing
    assert evidence == "task_id '0'; 2 action check(s) and 0 communicate check(s) match task '27'"
    assert by_case(paired)["airline_27:trial0"].outcome == "completed"

    strict = import_category(path, tau2_release, "orch", "airline", "label")
    excluded = by_case(strict)["airline_0:trial0"]
    assert excluded.outcome == "error" and excluded.error.startswith(EXCLUDED)
    assert "task_id '0', but 2 action check(s) and 0 communicate check(s) match task '27'" \
        in excluded.error
    # task 10 has no reference action and its record checks none: the content allows it
    assert by_case(strict)["airline_10:trial0"].outcome == "completed"
    score = get_benchmark("tau2").score(str(tau2_release.wheel), strict.cases[0], excluded, None)
    assert not score.scored


def test_a_record_without_action_checks_is_no_evidence_for_its_label(tmp_path, tau2_release):
    """Simulation 12 is labelled 12 (a task with a write); its record checks no action, so its
    task is one without reference actions, found by the user id in its dialogue."""
    path = trimmed(tmp_path, ORCH_AIRLINE, [12])
    paired = import_category(path, tau2_release, "orch", "airline", "content")
    assert [c.id for c in paired.cases] == ["airline_0:trial0"]
    evidence = paired.trajectories[0].published.pairing
    assert "no action checks and 0 communicate check(s) match tasks '0', '10'" in evidence
    assert evidence.endswith("identifiers in the dialogue: EHGLP3, emma_kim_9957")
    strict = import_category(path, tau2_release, "orch", "airline", "label")
    assert strict.trajectories[0].outcome == "error"


def test_action_ids_break_a_tie_by_the_tasks_own_ids_not_their_number(tmp_path, tau2_release):
    """Retail tasks 96 and 97 check the same actions; in the pinned release task 96's action
    ids are `97_*`: the prefix names the wrong task, the task's own ids the right one."""
    path = trimmed(tmp_path, ORCH_RETAIL, [11, 34])
    paired = import_category(path, tau2_release, "orch", "retail", "content")
    assert [c.id for c in paired.cases] == ["retail_96:trial0", "retail_97:trial0"]
    checked = by_case(paired)["retail_96:trial0"].published
    assert "match tasks '96', '97'; action ids name it" in checked.pairing
    assert checked.index == 1  # simulation 34 of the file, whose checks name `97_0`, `97_1`


def test_no_task_id_and_no_termination_are_named_not_assumed(tmp_path, tau2_release):
    path = trimmed(tmp_path, ORCH_RETAIL, [0, 1])
    strict = import_category(path, tau2_release, "orch", "retail", "label")
    assert strict.cases == [] and [r.case_id for r in strict.records] == [None, None]
    assert all(r.excluded.startswith("no task_id recorded, but ") for r in strict.records)
    assert all("no cell" in note for note in strict.notes)

    paired = import_category(path, tau2_release, "orch", "retail", "content")
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
    imported = import_category(path, tau2_release, "gpt-oss", "airline", "content")
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
    imported = import_category(path, tau2_release, "claude", "airline", "content")
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
    trajectory = import_category(path, tau2_release, "c", "airline", "content").trajectories[0]
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


def test_an_edited_policy_stops_by_default_and_imports_with_its_passage_on_request(
        tmp_path, tau2_release):
    def reword(data: dict[str, Any]) -> None:
        policy = data["info"]["environment_info"]["policy"]
        assert "explicit user confirmation (yes)" in policy
        data["info"]["environment_info"]["policy"] = policy.replace(
            "explicit user confirmation (yes)", "a clear yes from the user", 1)

    path = trimmed(tmp_path, CLAUDE, [0, 1], reword)
    with pytest.raises(InputError) as error:
        import_category(path, tau2_release, "c", "airline", "content")
    message = str(error.value)
    assert "not the pinned release's airline policy" in message and "\n" not in message
    assert message.endswith("to import it anyway set the model's option `policy: edited`")
    assert "a clear yes from the user" in message and "explicit user confirmation" in message

    imported = import_category(path, tau2_release, "c", "airline", "content", policy="edited")
    assert imported.identity["policy"] == "edited" and len(imported.cases) == 2
    difference = imported.records[0].policy_difference
    assert difference.startswith("first difference at character ") and "(line " in difference
    assert f"{path.name}: policy edited, {difference}" in imported.notes
    rows = pl.DataFrame(record_rows("c", "tau2", "airline", imported.records),
                        schema=RECORD_SCHEMA)
    table = published_table([rows], pl.DataFrame(schema=CASE_SCHEMA))
    assert file_lines(table)[0].endswith(f"; policy edited, {difference}")


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
    assert ReplayOptions(path="x.json").pairing == "content"
    with pytest.raises(InputError, match=r"field 'pairing': Invalid enum value 'guess' "
                                         r"\(allowed: content, label\)"):
        from_data({"path": "x", "pairing": "guess"}, ReplayOptions, "options")


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


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda p: p + "\nA revised rule.", "the file has 'Do not offer compensation for any "
     "other reason than the ones listed above.\\nA revised rule.', the release nothing more"),
    (lambda p: p[:-9], "the file has nothing more, the release 'Do not offer"),
])
def test_a_policy_difference_at_the_end_names_what_one_side_lacks(tau2_release, edit,
                                                                   expected):
    from toolcalib.benchmarks.tau2.release_check import policy_difference

    pinned = tau2_release.policy("airline")
    assert expected in policy_difference(edit(pinned), pinned)
    assert policy_difference(pinned, pinned) is None


@pytest.mark.slow
def test_every_shipped_simulation_is_paired_and_its_recorded_reward_reproduced(tau2_release):
    """The four shipped files, imported as the default run does (`pairing: content`) and scored:
    every simulation has a cell, is scored, and its recomputed reward equals the recorded one
    (about 35 s on 2 cores)."""
    bench = get_benchmark("tau2")
    seen = []
    for path in sorted(ROOT.glob("*/*.json")):
        domain = "retail" if "_retail_" in path.name else "airline"
        imported = import_category(path, tau2_release, path.parent.name, domain, "content")
        assert all(r.case_id is not None and r.excluded is None for r in imported.records)
        cases = {case.id: case for case in imported.cases}
        rewards = [(t.published.recorded["reward"],
                    bench.score(str(tau2_release.wheel), cases[t.case_id], t, None)
                    .details["reward"]) for t in imported.trajectories]
        assert all(recorded == recomputed for recorded, recomputed in rewards), path.name
        seen.append(len(rewards))
    assert sorted(seen) == [50, 50, 50, 114]
