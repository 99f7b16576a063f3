"""`toolcalib audit` on τ² runs, built in seconds from shipped data by the stages' commands: a
published run imported from a trimmed copy of the shipped Claude Sonnet 4.5 file (tasks 11 and
12) and the oracle policy on two release tasks, aggregated, with the run's manifest and no
dvc.lock (the manifest is then the record: `artifacts.which_record`). The audit reads the
cases and gold the run was scored on, prints τ²'s dialogues in the order they were spoken,
explains a write unit and refuses an unknown one."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolcalib.provenance.audit.artifacts import cell_paths, lock_config, which_record
from toolcalib.provenance.audit.case import align_messages
from toolcalib.provenance.audit.main import audit, main_audit
from toolcalib.records import Emission, Message, Step, ToolCall, Trajectory, TurnTrace

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "data/published/tau2/claude-sonnet-4-5" / (
    "claude-sonnet-4-5_aide-platform_2025-10-31__claude-sonnet-4-5_airline_default_gpt4.1_"
    "1trials.json")
GREETING = "Hi! How can I help you today?"
IMPORTED = ("claude", "baseline", "tau2", "airline")
POLICY = ("policy-oracle", "baseline", "tau2", "airline")
OWN = "results/published/claude/tau2/airline"


def _run(*argv: str) -> None:
    from toolcalib.cli import main

    assert main(list(argv)) == 0, argv


def _evaluate(model: str, cases: str, gold: str, release: str) -> None:
    run = f"{model}/baseline/tau2"
    _run("evaluate", "--profile", "default", "--benchmark", "tau2", "--source", release,
         "--cases", cases, "--gold", gold,
         "--trajectories", f"results/trajectories/{run}/airline.jsonl",
         "--actions", f"results/actions/{run}/airline.jsonl",
         "--scores", f"results/scores/{run}/airline.jsonl",
         "--per-case", f"results/runs/{run}/per_case.jsonl",
         "--triples", f"results/runs/{run}/triples.csv")


@pytest.fixture(scope="module")
def tau2_run(tmp_path_factory: pytest.TempPathFactory, tau2_wheel: Path) -> Path:
    """The two runs in the workflow's layout, as its rules call the stages (about 5 s)."""
    root = tmp_path_factory.mktemp("tau2-run")
    with contextlib.chdir(root):
        release = f"results/raw/tau2/{tau2_wheel.name}"
        Path(release).parent.mkdir(parents=True)
        shutil.copy(tau2_wheel, release)
        data = json.loads(CLAUDE.read_text(encoding="utf-8"))
        data["simulations"] = [s for s in data["simulations"] if s["task_id"] in ("11", "12")]
        Path("published").mkdir()
        Path("published", CLAUDE.name).write_text(json.dumps(data), encoding="utf-8")
        cases = "results/cases/tau2/airline.jsonl"
        _run("normalize", "--benchmark", "tau2", "--category", "airline", "--source", release,
             "--out", cases)
        kept = [line for line in Path(cases).read_text(encoding="utf-8").splitlines(True)
                if json.loads(line)["id"] in ("airline_11", "airline_14")]
        Path(cases).write_text("".join(kept), encoding="utf-8")
        _run("gold", "--benchmark", "tau2", "--cases", cases, "--source", release,
             "--out", "results/gold/tau2/airline.jsonl")
        spec = {"name": "claude", "backend": "replay", "options": {"path": "published"}}
        _run("import-run", "--model-spec", json.dumps(spec), "--benchmark", "tau2",
             "--category", "airline", "--source", release,
             "--out", "results/trajectories/claude/baseline/tau2/airline.jsonl",
             "--out-cases", f"{OWN}.cases.jsonl", "--out-records", f"{OWN}.records.jsonl",
             "--out-recorded", f"{OWN}.recorded.json")
        _run("gold", "--benchmark", "tau2", "--cases", f"{OWN}.cases.jsonl", "--source",
             release, "--out", f"{OWN}.gold.jsonl")
        oracle = {"name": "policy-oracle", "backend": "policy", "options": {"policy": "oracle"}}
        _run("generate", "--model-spec", json.dumps(oracle), "--variant", "baseline",
             "--benchmark", "tau2", "--cases", cases, "--source", release,
             "--out", "results/trajectories/policy-oracle/baseline/tau2/airline.jsonl")
        _evaluate("policy-oracle", cases, "results/gold/tau2/airline.jsonl", release)
        _evaluate("claude", f"{OWN}.cases.jsonl", f"{OWN}.gold.jsonl", release)
        models = ("claude", "policy-oracle")
        _run("aggregate",
             "--actions", *(f"results/actions/{m}/baseline/tau2/airline.jsonl" for m in models),
             "--runs", *(f"results/runs/{m}/baseline/tau2/per_case.jsonl" for m in models),
             "--published", f"{OWN}.records.jsonl", "--recorded", f"{OWN}.recorded.json",
             "--out-dir", "results/metrics")
        config = {"benchmarks": {"tau2": {"categories": ["airline"], "file": tau2_wheel.name}},
                  "classifier": "default", "limit": None, "variants": ["baseline"],
                  "models": [spec, oracle]}
        _run("manifest", "--config-json", json.dumps(config),
             "--inputs", "results/metrics/triples.csv", "results/metrics/per_case.parquet",
             cases, f"{OWN}.cases.jsonl", release,
             "--trajectories", *(f"results/trajectories/{m}/baseline/tau2/airline.jsonl"
                                 for m in models),
             "--out", "results/manifest.json")
    return root


def write_verdicts(case: Any, trajectory: Trajectory) -> list[tuple[Any, Any]]:
    """What `toolcalib audit` is handed to explain a write: the benchmark's write contexts,
    each judged by the confirm rule (the evaluate stage's verdict for rule profiles)."""
    from toolcalib.benchmarks.tau2.writes import write_contexts
    from toolcalib.classify.profiles import get_profile

    contexts = [context for _, context in write_contexts(case, trajectory)]
    return list(zip(contexts, get_profile("default").confirm_verdicts(contexts), strict=True))


# -- 2: the cases and gold the run was scored on ---------------------------------------------

def test_an_imported_run_is_audited_on_its_own_cases_and_gold(tau2_run: Path) -> None:
    for cell, cases, gold in (
            (IMPORTED, f"{OWN}.cases.jsonl", f"{OWN}.gold.jsonl"),
            (POLICY, "results/cases/tau2/airline.jsonl", "results/gold/tau2/airline.jsonl")):
        report = audit(tau2_run, *cell, "acc", gold="tool_call")
        assert report["ok"], report["problems"]
        paths = {a["role"]: a for a in report["provenance"]["artifacts"]}
        assert (paths["cases"]["path"], paths["gold"]["path"]) == (cases, gold)
        assert paths["cases"]["status"] == "ok"  # the manifest hashes the run's own cases
    # dvc.lock alone says so too: the stage that wrote the cell's actions read them
    lock = {"evaluate_tau2--claude--baseline": {
        "deps": [{"path": f"{OWN}.cases.jsonl"}, {"path": f"{OWN}.gold.jsonl"}],
        "outs": [{"path": "results/actions/claude/baseline/tau2/airline.jsonl"}]}}
    assert cell_paths(IMPORTED, {}, lock)["gold"] == f"{OWN}.gold.jsonl"
    assert cell_paths(POLICY, {}, lock)["cases"] == "results/cases/tau2/airline.jsonl"


# -- 3: τ²'s dialogue in the order it was spoken ---------------------------------------------

def spoken(case: dict[str, Any]) -> list[tuple[str, str]]:
    """The audit's replay of a case as (role, text), in the order it prints them."""
    out: list[tuple[str, str]] = []
    for turn in case["turns"]:
        for step in [*turn["steps"], None]:
            index = None if step is None else step["index"]
            out += [(m["role"], m["content"]) for m in turn["messages"]
                    if m["before_step"] == index]
            if step is not None:
                out.append(("assistant", step["text"]))
    return out


@pytest.mark.parametrize("cell, case_id", [(IMPORTED, "airline_12:trial0"),
                                           (POLICY, "airline_14")])
def test_a_tau2_dialogue_replays_in_the_order_it_was_spoken(
        tau2_run: Path, cell: tuple[str, ...], case_id: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    case = audit(tau2_run, *cell, "acc", case=case_id, gold="tool_call")["case"]
    path = tau2_run / f"results/trajectories/{'/'.join(cell)}.jsonl"
    trajectory = next(t for t in map(json.loads, path.read_text().splitlines())
                      if t["case_id"] == case_id)
    said = [(m["role"], m.get("content", "")) for m in trajectory["messages"]
            if m["role"] != "tool"]
    assert spoken(case) == said
    first = [m for m in case["turns"][0]["messages"] if m["role"] != "system"]
    assert [(m["role"], m["content"], m["before_step"]) for m in first][0] == (
        "assistant", GREETING, 0)
    assert main_audit([*cell, "acc", "--gold", "tool_call", "--root", str(tau2_run),
                       "--case", case_id]) == 0
    text = capsys.readouterr().out
    assert text.index(f"    assistant: {GREETING}") < text.index("    user: ")


def test_the_greeting_opens_the_first_turn_and_no_step_answers_it() -> None:
    ask = Emission(text="Shall I cancel it?")
    write = Emission(tool_calls=[ToolCall(name="cancel", arguments={"id": "X1"})], parse="ok")
    trajectory = Trajectory(
        case_id="a_0", benchmark="tau2", category="a", model="m", variant="baseline",
        outcome="completed",
        turns=[TurnTrace(index=0, ended="no_call", user="cancel X1",
                         steps=[Step(index=0, emission=ask)]),
               TurnTrace(index=1, ended="no_call", user="yes",
                         steps=[Step(index=0, emission=write, results=["ok"]),
                                Step(index=1, emission=Emission(text="Done."))])],
        messages=[Message(role="system", content="policy"),
                  Message(role="assistant", content=GREETING),
                  Message(role="user", content="cancel X1"),
                  Message(role="assistant", content="Shall I cancel it?"),
                  Message(role="user", content="yes"),
                  Message(role="assistant", tool_calls=write.tool_calls),
                  Message(role="tool", name="cancel", content="ok"),
                  Message(role="assistant", content="Done."),
                  Message(role="user", content="###STOP###")])
    aligned = align_messages(trajectory)
    assert [(m["role"], m["content"], m["before_step"]) for m in aligned[0]] == [
        ("system", "policy", 0), ("assistant", GREETING, 0), ("user", "cancel X1", 0)]
    assert [(m["content"], m["before_step"]) for m in aligned[1]] == [
        ("yes", 0), ("###STOP###", None)]


# -- 4: a write unit names its call and why; an unknown unit is an error ---------------------

def test_a_write_unit_names_its_call_and_why_it_was_or_was_not_confirmed(
        tau2_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--gold", "confirm", "--root", str(tau2_run)]
    for cell, unit, name, confirmed in (
            (IMPORTED, "airline_12:trial0#write1", "update_reservation_baggages", False),
            (IMPORTED, "airline_11:trial0#write1", "update_reservation_flights", True),
            (POLICY, "airline_14#write2", "book_reservation", True)):
        report = audit(tau2_run, *cell, "gar", case=unit, gold="confirm",
                       write_verdicts=write_verdicts)
        assert report["ok"], report["problems"]
        case = report["case"]
        written = case["unit"]
        assert (written["kind"], written["call"]["name"]) == ("write", name)
        assert written["recorded"]["confirmed"] is confirmed
        assert written["verdict"]["confirmed"] is confirmed and written["agrees"]
        assert written["verdict"]["rule"].startswith("default:confirm:")
        assert (written["verdict"]["rule"] == "default:confirm:ok") is confirmed
        assert (case["gold_action"], case["gold_turn"]) == ("confirm", written["turn"])
        marked = [c for t in case["turns"] if t["index"] == written["turn"]
                  for s in t["steps"] for c in s["calls"] if c["unit"]]
        assert [c["name"] for c in marked] == [name]
        assert main_audit([*cell, "gar", *base, "--case", unit],
                          write_verdicts=write_verdicts) == 0
        text = capsys.readouterr().out
        line = next(x for x in text.splitlines() if x.startswith(f"  unit {unit}: "))
        assert f"{name}(" in line and f"turn {written['turn']} step " in line
        assert f"    why: {written['verdict']['rule']}: " in text
        assert ("the confirm rule: confirmed, agrees" if confirmed else
                "the confirm rule: not confirmed, agrees") in text
    # the baggage update's payment card is named nowhere before it: not confirmed, and why
    unit = audit(tau2_run, *IMPORTED, "gar", case="airline_12:trial0#write1", gold="confirm",
                 write_verdicts=write_verdicts)["case"]["unit"]
    assert unit["call"]["arguments"]["reservation_id"] == "YAX4DR"
    assert unit["verdict"]["rule"] == "default:confirm:details_missing"
    assert "credit_card_4938634" in unit["verdict"]["evidence"]
    # without the rule the call and its texts are still named, and the reason is said missing
    assert main_audit([*IMPORTED, "gar", *base, "--case", "airline_12:trial0#write1"]) == 0
    text = capsys.readouterr().out
    assert "update_reservation_baggages(" in text and "why: not recomputed" in text
    assert "user's reply: Yes, please go ahead and add the two checked bags" in text


@pytest.mark.parametrize("unit", ["airline_12:trial0#write2", "airline_12:trial0#ask9",
                                  "airline_12:trial0#", "airline_99:trial0#write1"])
def test_an_unknown_unit_is_one_line_and_exit_2(
        tau2_run: Path, unit: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_audit([*IMPORTED, "gar", "--gold", "confirm", "--root", str(tau2_run),
                       "--case", unit]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"no unit {unit!r} in claude/baseline/tau2/airline" in captured.err
    known = "airline_12:trial0#write1" if unit.startswith("airline_12") else "(none)"
    assert captured.err.rstrip().endswith(f": {known}")


# -- 1: which record; a run without dvc.lock is audited against its manifest -----------------

def test_the_record_is_dvc_lock_only_for_a_run_of_its_config() -> None:
    config = {"limit": 3, "models": [{"name": "m"}]}
    command = ("toolcalib manifest --config-json "
               f"{shlex.quote(json.dumps(config, separators=(',', ':')))} --out x")
    stages = {"manifest": {"cmd": f"mkdir -p results && bash -c {shlex.quote(command)}"}}
    assert lock_config(stages) == config
    assert which_record({"config": config}, stages).kind == "dvc.lock"
    other = which_record({"config": {**config, "limit": 2}}, stages)
    assert other.kind == "results/manifest.json"
    assert other.why == ("dvc.lock records a run of another config (its manifest stage's "
                         "config differs in: limit)")
    assert which_record({"config": config}, {}).why == (
        "there is no dvc.lock, or it records no stage")
    assert which_record({}, stages).kind == "dvc.lock"  # no manifest: the lock or nothing


def test_without_dvc_lock_a_changed_file_fails_against_the_manifest(
        tau2_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_audit([*IMPORTED, "acc", "--gold", "tool_call", "--root", str(tau2_run)]) == 0
    text = capsys.readouterr().out
    assert "the run's own record, vs the file on disk: there is no dvc.lock" in text
    assert "stages      not listed: there is no dvc.lock" in text
    assert ("audit: OK (the number is reproduced and every artifact the run's manifest hashes "
            "matches it; not hashed by it: gold, actions, scores, run_per_case)") in text
    run = tmp_path / "run"
    shutil.copytree(tau2_run, run)
    trajectories = run / "results/trajectories/claude/baseline/tau2/airline.jsonl"
    trajectories.write_bytes(trajectories.read_bytes().replace(b"YAX4DR", b"YAX4DQ", 1))
    report = audit(run, *IMPORTED, "acc", gold="tool_call")
    bad = [a for a in report["provenance"]["artifacts"] if a["status"] != "ok"
           and a["status"] not in ("unhashed", "record")]
    assert [(a["role"], a["status"]) for a in bad] == [("trajectories", "modified")]
    assert bad[0]["why"] and "airline_12:trial0" in " ".join(bad[0]["why"])
    assert main_audit([*IMPORTED, "acc", "--gold", "tool_call", "--root", str(run)]) == 1
    assert "does not match results/manifest.json" in capsys.readouterr().out
