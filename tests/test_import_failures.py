"""A published run's import that fails, and what each import says (issue 40, item 3).

- Bad input in one model's files fails that import alone (`import-run --out-status`): the
  one-line reason on stdout (the terminal, under Snakemake) and in the status file, the other
  outputs empty, exit 0; without `--out-status` it still stops (test_tau2_published).
- Each import counts its records per file on stdout and in its status: scored, excluded,
  without a cell, not selected.
- Several τ² files of one domain in one folder are the trials of one run (trials numbered on in
  file order), or stop the import naming both files where they are not.
- The report lists the failed imports first; the status footer counts them, names each with its
  reason and the records without a cell, and `toolcalib status` exits 1 while one failed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.test_report import tables
from tests.test_tau2_published import CLAUDE, _load
from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import ImportedRun
from toolcalib.benchmarks.tau2.published import import_category
from toolcalib.cli import main
from toolcalib.jsonio import InputError, write_jsonl
from toolcalib.metrics.published import ImportFile, ImportStatus, failed_imports, read_imports
from toolcalib.pipeline.status import collect, collect_imports, print_summary, render
from toolcalib.records import Published, Trajectory
from toolcalib.report.build import render_html, render_summary
from toolcalib.stages.import_run import count_lines, import_status, write_status

PAIRING = ReplayOptions(path="x").pairing
"""The default pairing (whatever its name)."""
OUTS = ("trajectories", "cases", "records", "recorded", "status")


def import_run(folder: str, category: str, wheel: Path, status: bool = True,
               model: str = "pub") -> tuple[int, dict[str, Path]]:
    """`toolcalib import-run` of a τ² folder, as the workflow's rule runs it; its status and
    outputs (relative to the working folder)."""
    out = {name: Path("out") / f"{category}.{name}" for name in OUTS}
    spec = json.dumps({"name": model, "backend": "replay", "options": {"path": folder}})
    argv = ["import-run", "--model-spec", spec, "--benchmark", "tau2", "--category", category,
            "--source", str(wheel), "--out", str(out["trajectories"]),
            "--out-cases", str(out["cases"]), "--out-records", str(out["records"]),
            "--out-recorded", str(out["recorded"])]
    return main([*argv, *(["--out-status", str(out["status"])] if status else [])]), out


def sims(keep: list[int], edit: Any = None) -> dict[str, Any]:
    """The shipped Claude airline file with simulations `keep` (by position), `edit` applied."""
    data = _load(CLAUDE)
    data["simulations"] = [data["simulations"][i] for i in keep]
    if edit is not None:
        edit(data)
    return data


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_bad_file_fails_its_import_alone_with_its_reason(tmp_path, tau2_wheel, capsys,
                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "runs" / "summary.json", {"domain": "airline", "pass_rate": 0.4})
    status, out = import_run("runs", "airline", tau2_wheel)
    assert status == 0
    line, = capsys.readouterr().out.splitlines()
    reason = ("runs/summary.json: keys domain, pass_rate (no info, tasks, simulations), "
              "expected an object with keys 'info', 'tasks' and 'simulations' (τ²'s results "
              "format)")
    assert line == (f"[toolcalib] pub tau2 airline: import failed: {reason} (recorded in "
                    "out/airline.status; no cell, the other models go on)")
    recorded, = read_imports([out["status"]])
    assert recorded == ImportStatus("pub", "tau2", "airline", "failed", reason, [])
    for name in ("trajectories", "cases", "records"):
        assert out[name].read_bytes() == b""  # no cell, and every later stage reads it
    assert json.loads(out["recorded"].read_text())["source"] == "import failed"
    first = {name: path.read_bytes() for name, path in out.items()}
    assert str(tmp_path) not in b"".join(first.values()).decode()
    assert import_run("runs", "airline", tau2_wheel)[0] == 0  # same input, same bytes
    assert {name: path.read_bytes() for name, path in out.items()} == first


def test_an_import_counts_its_records_on_stdout_and_in_its_status(tmp_path, tau2_wheel,
                                                                 capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "claude" / "airline.json", sims([0, 1]))
    assert import_run("claude", "airline", tau2_wheel)[0] == 0
    assert capsys.readouterr().out == ("[toolcalib] pub tau2 airline: 2 records, 2 scored, "
                                       "0 excluded, 0 without a cell\n")
    status, out = import_run("claude", "retail", tau2_wheel)
    assert status == 0 and capsys.readouterr().out == ""  # no file: the log and status say so
    assert read_imports([out["status"]])[0] == ImportStatus(
        "pub", "tau2", "retail", "imported", "claude: no results file for domain retail", [])
    airline, = read_imports([Path("out/airline.status")])
    assert airline.status == "imported" and airline.reason is None
    assert airline.files == [ImportFile("airline.json", 2, 2, 0, 0, 0)]


def _record(file: str, index: int, case: str | None, claimed: str,
            excluded: str | None = None) -> Published:
    return Published(file=file, file_sha256="0" * 64, index=index, record=str(index),
                     claimed_case=claimed, case_id=case, excluded=excluded)


def _trajectory(case: str, outcome: str, record: Published | None) -> Trajectory:
    return Trajectory(case_id=case, benchmark="b", category="c", model="m", variant="baseline",
                      outcome=outcome, turns=[], messages=[], published=record)  # type: ignore[arg-type]


def test_records_are_counted_per_file_by_fate() -> None:
    records = [_record("a.json", 0, "c_0", "c_0"),
               _record("a.json", 1, "c_1", "c_1", "tau2:published:excluded: no task"),
               _record("a.json", 2, None, "x", "no task_id recorded"),
               _record("b.json", 0, None, "c_9", "not selected (limit or cases)"),
               _record("b.json", 1, "c_2", "c_2")]
    trajectories = [_trajectory("c_0", "completed", records[0]),
                    _trajectory("c_1", "error", records[1]),
                    _trajectory("c_2", "step_cap", records[4]),
                    _trajectory("c_3", "error", None)]  # a selected case without a record
    status = import_status("m", "b", "c", ImportedRun([], trajectories, {}, records), {"c_9"})
    assert status.files == [ImportFile("a.json", 3, 1, 1, 1, 0),
                            ImportFile("b.json", 2, 1, 0, 0, 1)]
    assert status.cases_without_record == 1
    assert count_lines("m b c", status, "R") == [
        "[toolcalib] m b c: a.json: 3 records, 1 scored, 1 excluded, 1 without a cell (see R)",
        "[toolcalib] m b c: b.json: 2 records, 1 scored, 0 excluded, 0 without a cell, "
        "1 not selected",
        "[toolcalib] m b c: 1 selected case without a record (excluded)"]


def test_several_files_of_a_domain_are_the_trials_of_one_run(tmp_path, tau2_release):
    folder = tmp_path / "claude"
    first = write(folder / "a.json", sims([0, 1]))
    write(folder / "b.json", sims([0]))  # task 13 again: its second trial
    imported = import_category(folder, tau2_release, "c", "airline", PAIRING)
    assert [t.case_id for t in imported.trajectories] == [
        "airline_3:trial0", "airline_13:trial0", "airline_13:trial1"]
    assert [c.id for c in imported.cases] == [t.case_id for t in imported.trajectories]
    assert [(r.file, r.index, r.trial, r.case_id) for r in imported.records] == [
        ("a.json", 0, 0, "airline_13:trial0"), ("a.json", 1, 0, "airline_3:trial0"),
        ("b.json", 0, 0, "airline_13:trial1")]
    moved = imported.records[2]
    assert moved.pairing is not None and moved.pairing.endswith(
        "trial 1: trial 0 of b.json (file 2 of 2), numbered on after the domain's earlier files")
    assert imported.trajectories[2].published == moved
    assert imported.notes[0] == (f"{folder}: 2 results files of domain airline, read as the "
                                 "trials of one run: a.json, b.json")
    assert sorted(imported.identity["files"]) == ["a.json", "b.json"]
    # a file's trials continue after the highest trial before it, whatever the task
    write(folder / "c.json", sims([1]))
    again = import_category(folder, tau2_release, "c", "airline", PAIRING)
    assert [t.case_id for t in again.trajectories] == [
        "airline_3:trial0", "airline_3:trial2", "airline_13:trial0", "airline_13:trial1"]
    assert first.exists()


def _other_agent(data: dict[str, Any]) -> None:
    data["info"]["agent_info"]["llm"] = "another-model"


def _other_task(data: dict[str, Any]) -> None:
    task = next(t for t in data["tasks"] if t["id"] == "13")
    task["user_scenario"]["instructions"]["reason_for_call"] += " And more."


@pytest.mark.parametrize("edit, expected", [
    (_other_agent, "b.json: field 'info.agent_info.llm': \"another-model\", but a.json has "
                   "\"claude-sonnet-4-5\": results files of one domain in one folder are read "
                   "as trials of one run only with the same agent, user and caps"),
    (_other_task, "b.json: field 'tasks' (id '13'): not the task a.json holds under that id"),
])
def test_files_of_two_runs_in_one_folder_stop_the_import(tmp_path, tau2_release, edit,
                                                         expected):
    folder = tmp_path / "claude"
    write(folder / "a.json", sims([0]))
    write(folder / "b.json", sims([1], edit))
    with pytest.raises(InputError) as error:
        import_category(folder, tau2_release, "c", "airline", PAIRING)
    assert expected in str(error.value) and "\n" not in str(error.value)


FAILED = ImportStatus("broken", "tau2", "airline", "failed",
                      "data/x.json: field 'info.environment_info.policy': not the pinned "
                      "release's airline policy", [])


def test_the_report_lists_the_failed_imports_first() -> None:
    plain = tables()
    assert "Imports that failed" not in render_html(plain) + render_summary(plain)
    shown = replace(plain, import_failures=failed_imports([FAILED]))
    html = render_html(shown)
    assert html.index('<section id="imports-failed">') < html.index('<section id="headline">')
    assert "not the pinned release&#x27;s airline policy" in html
    summary = render_summary(shown).splitlines()
    assert summary[2] == "## Imports that failed"
    assert ("- broken · tau2 · airline: data/x.json: field 'info.environment_info.policy': "
            "not the pinned release's airline policy") in summary
    assert failed_imports([ImportStatus("ok", "tau2", "retail", "imported", None, [])]
                          ).height == 0


def test_the_status_footer_counts_imports_and_names_each_failure(tmp_path, capsys):
    results = tmp_path / "results"
    published = results / "published"
    write_status(str(published / "broken/tau2/airline.import.json"), FAILED)
    write_status(str(published / "orch/tau2/retail.import.json"), ImportStatus(
        "orch", "tau2", "retail", "imported", None,
        [ImportFile("retail.json", 114, 104, 0, 10, 0)]))
    write_status(str(published / "orch/tau2/airline.import.json"), ImportStatus(
        "orch", "tau2", "airline", "imported", "orch: no results file for domain airline", []))
    for model in ("broken", "orch"):
        write_jsonl(results / f"trajectories/{model}/baseline/tau2/airline.jsonl", [])
    jobs = [("broken", "baseline", "tau2", "airline"), ("orch", "baseline", "tau2", "airline")]
    keys = [("broken", "tau2", "airline"), ("orch", "tau2", "airline"),
            ("orch", "tau2", "retail"), ("late", "tau2", "airline")]
    text = render(collect(results, jobs), results, imports=collect_imports(results, keys))
    lines = text.splitlines()
    assert lines[2].split()[:3] == ["broken", "tau2", "0/1"]
    assert lines[2].endswith("1 import failed")
    assert ("published imports: 2 of 4 imported (1 without a file for their category), "
            "1 failed, 1 not run") in lines
    assert "  orch/tau2/retail: 10 of 114 records" in lines
    assert f"    records: {published}/orch/tau2/retail.records.jsonl" in lines
    assert f"  broken/tau2/airline: {FAILED.reason}" in lines
    assert f"    status: {published}/broken/tau2/airline.import.json" in lines
    assert lines[-1].startswith("[toolcalib] 1 published import(s) failed")
    assert main(["status", "--results", str(results)]) == 1  # while an import has failed
    assert "broken/tau2/airline: data/x.json" in capsys.readouterr().out
    print_summary(jobs, results=str(results), imports=keys)
    assert "1 published import(s) failed" in capsys.readouterr().err
    (published / "broken/tau2/airline.import.json").unlink()
    (results / "trajectories/broken/baseline/tau2/airline.jsonl").unlink()
    assert main(["status", "--results", str(results)]) == 0


BROKEN_OVERLAY = """
models:
  - {name: policy-oracle, backend: policy, options: {policy: oracle}}
  - {name: policy-never_call, backend: policy, options: {policy: never_call}}
  - {name: demo, backend: replay, variants: [baseline],
     options: {path: tests/data/replay, model: demo-FC, format: fc}}
  - {name: broken, backend: replay, variants: [baseline],
     options: {path: broken, model: demo-FC, format: fc}}
"""


@pytest.mark.slow
def test_a_failed_import_leaves_every_other_cell_and_the_report(tiny_build: Path,
                                                                 tmp_path: Path) -> None:
    """The tiny build plus two published BFCL runs, one with a truncated line: Snakemake ends
    0 with the reason on the terminal and in the footer, every other cell and the report
    built, the failure listed first; a fixed file reruns that model's imports alone."""
    import shutil
    import subprocess

    from tests.support.workflow_build import TINY, clone, sh

    project = clone(tiny_build, tmp_path / "project")
    demo = project / "tests/data/replay/demo-FC"
    shutil.copytree(demo, project / "broken/demo-FC")
    bad = project / "broken/demo-FC/non_live/BFCL_v4_irrelevance_result.json"
    bad.write_text(bad.read_text() + '{"id": "irrelevance_2", "result": [{"math.sum": ')
    overlay = tmp_path / "published.yaml"
    overlay.write_text(BROKEN_OVERLAY)
    done = sh("snakemake", "--cores", "2", "--configfile", TINY, str(overlay), "--quiet",
              cwd=project)
    reason = ("broken/demo-FC/non_live/BFCL_v4_irrelevance_result.json:3: not valid JSON "
              "(Expecting value at column 49); truncated or not a BFCL file")
    assert (f"[toolcalib] broken bfcl irrelevance: import failed: {reason} (recorded in "
            "results/published/broken/bfcl/irrelevance.import.json; no cell, the other models "
            "go on)") in done.stdout.splitlines()
    assert "[toolcalib] demo bfcl multi_turn_base: 3 records, 3 scored, 0 excluded, 0 without " \
           "a cell" in done.stdout
    assert f"  broken/bfcl/irrelevance: {reason}" in done.stderr.splitlines()
    assert "[toolcalib] 1 published import(s) failed" in done.stderr
    triples = (project / "results/metrics/triples.csv").read_text()
    cells = {tuple(line.split(",")[:4]) for line in triples.splitlines()[1:]}
    assert ("demo", "baseline", "bfcl", "irrelevance") in cells
    assert ("broken", "baseline", "bfcl", "multi_turn_base") in cells
    assert not any(cell[0] == "broken" and cell[3] == "irrelevance" for cell in cells)
    assert ("policy-never_call", "sri", "bfcl", "irrelevance") in cells
    summary = (project / "results/report/summary.md").read_text().splitlines()
    assert summary[2] == "## Imports that failed"
    assert f"- broken · bfcl · irrelevance: {reason}" in summary
    status = subprocess.run(["toolcalib", "status"], cwd=project, capture_output=True,
                            text=True)
    assert status.returncode == 1 and f"broken/bfcl/irrelevance: {reason}" in status.stdout
    shutil.copy(demo / "non_live/BFCL_v4_irrelevance_result.json", bad)  # fixed
    dry = sh("snakemake", "--cores", "2", "--configfile", TINY, str(overlay), "-n", cwd=project)
    # the model's imports alone (each names every file of its folders in its identity)
    assert dry.stdout.count("rule import_run:") == 3 and "model=demo" not in dry.stdout
    assert "model=broken, benchmark=bfcl, category=irrelevance" in dry.stdout
