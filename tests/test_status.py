"""`toolcalib status` on a results folder built here: every state a generate job can leave
(done with scored and excluded cases, failed requests, crashed, not run) and what it says."""

from __future__ import annotations

import json
from pathlib import Path

from toolcalib.cli import main
from toolcalib.jsonio import write_jsonl
from toolcalib.pipeline.status import collect, print_summary, read_outcomes, render
from toolcalib.records import Trajectory
from toolcalib.stages.generate import failure_message

TRICKY = {"backend": "openai", "model": 'm","outcome":"error', "base_url": "http://h/v1"}
"""An identity whose value spells a top-level outcome (escaped in the line: never read)."""


def trajectory(case: str, model: str, variant: str, category: str, outcome: str,
               error: str | None = None) -> Trajectory:
    return Trajectory(case_id=case, benchmark="bfcl", category=category, model=model,
                      model_identity=TRICKY, variant=variant, outcome=outcome, error=error,
                      turns=[], messages=[])


def results_folder(root: Path) -> Path:
    results = root / "results"
    runs = results / "trajectories"
    write_jsonl(runs / "policy-oracle/baseline/bfcl/irrelevance.jsonl",
                [trajectory(f"irrelevance_{i}", "policy-oracle", "baseline", "irrelevance",
                            "completed") for i in range(2)])
    write_jsonl(runs / "api/baseline/bfcl/multi_turn_base.jsonl", [
        trajectory("multi_turn_base_0", "api", "baseline", "multi_turn_base", "completed"),
        trajectory("multi_turn_base_1", "api", "baseline", "multi_turn_base",
                   "context_overflow", "prompt of 9000 tokens exceeds the window of 8192"),
        trajectory("multi_turn_base_2", "api", "baseline", "multi_turn_base", "step_cap")])
    logs = results / "logs" / "generate" / "api"
    failed = [trajectory(f"irrelevance_{i}", "api", "baseline", "irrelevance", "error",
                         "http://h/v1 (m): HTTP 401: bad key (a) (b).") for i in range(2)]
    message = failure_message("api/baseline/bfcl/irrelevance", [*failed, failed[0]], failed,
                              ".toolcalib/store", "results/...", (1, 0))
    (logs / "baseline/bfcl").mkdir(parents=True)
    (logs / "baseline/bfcl/irrelevance.log").write_text(
        "[toolcalib] api/baseline/bfcl/irrelevance: 3/3 cases (100%)\n"
        f"toolcalib generate: error: {message}\n")
    (logs / "sri/bfcl").mkdir(parents=True)
    (logs / "sri/bfcl/irrelevance.log").write_text("Traceback (most recent call last):\n"
                                                   "RuntimeError: boom\n")
    return results


def test_outcomes_are_read_without_decoding_and_agree_with_the_records(tmp_path):
    path = results_folder(tmp_path) / "trajectories/api/baseline/bfcl/multi_turn_base.jsonl"
    counts, errors = read_outcomes(path)
    decoded = [json.loads(line)["outcome"] for line in path.read_text().splitlines()]
    assert sorted(counts.elements()) == sorted(decoded)
    assert counts == {"completed": 1, "context_overflow": 1, "step_cap": 1}
    assert errors == {"context_overflow": "prompt of 9000 tokens exceeds the window of 8192"}


def test_every_job_state_is_told_with_where_to_look(tmp_path):
    results = results_folder(tmp_path)
    expected = [("api", "baseline", "bfcl", "irrelevance"),
                ("api", "baseline", "bfcl", "multi_turn_base"),
                ("api", "sri", "bfcl", "irrelevance"), ("api", "sri", "bfcl", "multi_turn_base"),
                ("policy-oracle", "baseline", "bfcl", "irrelevance")]
    states = {s.label: s for s in collect(results, expected)}
    assert {label: s.state for label, s in states.items()} == {
        "api/baseline/bfcl/irrelevance": "failed", "api/baseline/bfcl/multi_turn_base": "done",
        "api/sri/bfcl/irrelevance": "no output", "api/sri/bfcl/multi_turn_base": "not run",
        "policy-oracle/baseline/bfcl/irrelevance": "done"}
    failed = states["api/baseline/bfcl/irrelevance"]
    assert (failed.failed, failed.total) == (2, 3)
    assert failed.error == "http://h/v1 (m): HTTP 401: bad key (a) (b)."

    text = render(list(states.values()), results, snakemake_log=".snakemake/log/x.log")
    lines = text.splitlines()
    assert lines[1].split() == ["model", "benchmark", "jobs", "done", "cases", "scored",
                                "excluded", "(by", "reason)", "failed", "jobs", "(cases)",
                                "other", "jobs", "without", "output"]
    assert lines[2].split() == ["api", "bfcl", "1/4", "3", "2", "context_overflow", "1",
                                "1", "(2)", "1", "no", "output,", "1", "not", "run"]
    assert lines[3].split() == ["policy-oracle", "bfcl", "1/1", "2", "2", "-", "-", "-"]
    assert ("  api/baseline/bfcl/irrelevance: 2 of 3 cases failed; last error: http://h/v1 (m):"
            " HTTP 401: bad key (a) (b).") in lines
    assert f"    log: {results}/logs/generate/api/baseline/bfcl/irrelevance.log" in lines
    assert "  api/sri/bfcl/irrelevance: RuntimeError: boom" in lines
    assert ("  api/baseline/bfcl/multi_turn_base: context_overflow 1 (first: prompt of 9000 "
            "tokens exceeds the window of 8192)") in lines
    assert "rerunning the same command asks only the failed requests" in text
    assert lines[-1].endswith("Snakemake's log: .snakemake/log/x.log")


def test_the_command_lists_what_is_on_disk_and_fails_while_jobs_failed(tmp_path, capsys):
    results = results_folder(tmp_path)
    assert main(["status", "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert "api   " in out and "1/3" in out  # the job never started is not on disk
    (results / "logs/generate/api/baseline/bfcl/irrelevance.log").unlink()
    (results / "logs/generate/api/sri/bfcl/irrelevance.log").unlink()
    assert main(["status", "--results", str(results)]) == 0
    assert main(["status", "--results", str(tmp_path / "none")]) == 0
    assert "no generate job has left a file" in capsys.readouterr().out


def test_the_snakemake_hook_never_raises(tmp_path, capsys, monkeypatch):
    results = results_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    print_summary([("policy-oracle", "baseline", "bfcl", "irrelevance")], ["/elsewhere/x.log"])
    err = capsys.readouterr().err
    assert "policy-oracle  bfcl       1/1" in err and "Snakemake's log: /elsewhere/x.log" in err
    (results / "trajectories/policy-oracle/baseline/bfcl/irrelevance.jsonl").write_text("{x\n")
    print_summary()
    assert capsys.readouterr().err.startswith("[toolcalib] status: no summary (JSONDecodeError")
