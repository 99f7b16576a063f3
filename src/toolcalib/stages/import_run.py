"""Stage: a published run (a model with backend `replay`) read by its benchmark's plugin into
one category's cases and trajectories (`Benchmark.import_run`), variant `baseline`, the
provenance of each record it read (`records.Published`, one JSON line each), and the run's own
headline for the category as recorded (`<category>.recorded.json`, `ImportedRun.summary`).

Bad input (`InputError`: a file of another shape, another release's policy, a malformed line) is
a property of this model's files, not of the run:

- without `out_status` (a command typed by hand) it stops with one line naming file, line and
  field (exit 2) and leaves no output (stale ones removed first);
- with `out_status` (the workflow's rule) the import is recorded as failed: the status file
  (`metrics.published.ImportStatus`) holds the one-line reason, the other outputs are written
  empty (the model has no cell of the category; every other model's jobs, the aggregation and
  the report go on), the reason is printed on stdout, which Snakemake leaves on the terminal
  (stderr goes to the job's log), and the stage exits 0. The failure is an artifact like any
  output: the same files and code give the same bytes, and a fixed file (an input of the job)
  reruns just this import.

On success the status file counts each file's records by fate (scored, excluded, without a
cell, not selected), and one line per file says so on stdout, e.g. `<model> tau2 retail: 114
records, 104 scored, 0 excluded, 10 without a cell (see <its records file>)`; a category
without a file says so in the log and the status file only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import ImportedRun, get_benchmark, settings
from toolcalib.config import model_options, parse_model_spec
from toolcalib.generate import replay
from toolcalib.jsonio import InputError, atomic_write_bytes, dumps, read_records, write_jsonl
from toolcalib.metrics.published import (
    RECORD_COLUMNS,
    ImportFile,
    ImportStatus,
    record_rows,
)
from toolcalib.metrics.rows import jsonl_bytes
from toolcalib.records import MODEL_OUTCOMES, Case
from toolcalib.stages import Arg, CaseIds, Limit, json_object, log
from toolcalib.stages.generate import select

SUMMARY_FIELDS = ("file", "accuracy", "correct_count", "total_count", "source")
"""The recorded headline's fields (`ImportedRun.summary`; all null where none is recorded)."""
FAILED_SOURCE = "import failed"
"""The recorded headline's `source` where the import failed (the reason: the status file)."""


def say(message: str) -> None:
    """One line on stdout: under Snakemake on the terminal (the rule sends stderr to its log)."""
    print(message, file=sys.stdout, flush=True)


def run(model_spec: Annotated[str, Arg("JSON: {name, backend: replay, options}")],
        benchmark: str, category: str,
        source: Annotated[str, Arg("the downloaded release")],
        out: Annotated[str, Arg("out: the trajectories (JSON lines)")],
        out_cases: Annotated[str, Arg("out: the cases scored (JSON lines)")],
        out_records: Annotated[str, Arg("out: every record read, with its provenance (JSON "
                                        "lines)")],
        out_recorded: Annotated[str, Arg("out: the run's own headline for the category, as "
                                         "recorded (JSON)")],
        cases: Annotated[str | None, Arg(
            "the release's cases of the category (benchmarks whose results files do not "
            "embed theirs: BFCL)")] = None,
        limit: Limit = None, case_ids: CaseIds = None,
        benchmark_options: Annotated[dict[str, Any] | None, Arg(
            "JSON: the benchmark config section's own settings", json_object)] = None,
        out_status: Annotated[str | None, Arg(
            "out: the import's status (JSON: records per file by fate, or why it failed); bad "
            "input is then recorded there, the other outputs written empty, exit 0 (the "
            "workflow's rule), instead of stopping (exit 2)")] = None) -> None:
    """`cases`: the release's cases of `category` (selected by `limit` / `case_ids`), for a
    benchmark whose results files do not embed their own; `out_status`: where the import's
    status goes (and where bad input is recorded instead of stopping: see the module)."""
    for path in (out, out_cases, out_records, out_recorded, out_status):
        if path is not None:
            Path(path).unlink(missing_ok=True)
    spec = parse_model_spec(model_spec)
    label = f"{spec.name} {benchmark} {category}"
    try:
        options = model_options(ReplayOptions, spec)
        every = [] if cases is None else read_records(cases, Case)
        given = [] if cases is None else select(every, cases, limit, case_ids)
        bench = get_benchmark(benchmark)
        imported = bench.import_run(source, options, spec.name, category, given,
                                    settings(bench.case_settings, benchmark_options), replay)
    except InputError as exc:
        if out_status is None:
            raise
        reason = portable(str(exc))
        write_status(out_status, ImportStatus(spec.name, benchmark, category, "failed",
                                              reason, []))
        write_outputs(spec.name, benchmark, category, ImportedRun([], [], {}),
                      out, out_cases, out_records, out_recorded, failed=True)
        log(f"{label}: import failed: {reason}")
        say(f"[toolcalib] {label}: import failed: {reason} (recorded in {out_status}; no "
            "cell, the other models go on)")
        return
    for note in imported.notes:
        log(f"{spec.name}/{benchmark}/{category}: {note}")
    write_outputs(spec.name, benchmark, category, imported, out, out_cases, out_records,
                  out_recorded)
    status = import_status(spec.name, benchmark, category, imported,
                           {case.id for case in every} - {case.id for case in given})
    if out_status is not None:
        write_status(out_status, status)
    for line in count_lines(label, status, out_records):
        say(line)
    scored = sum(t.outcome in MODEL_OUTCOMES for t in imported.trajectories)
    log(f"{spec.name}/{benchmark}/{category}: {len(imported.trajectories)} trajectories "
        f"({scored} with a model outcome) -> {out}; cases -> {out_cases}; "
        f"{len(imported.records)} records -> {out_records}")


def write_outputs(model: str, benchmark: str, category: str, imported: ImportedRun, out: str,
                  out_cases: str, out_records: str, out_recorded: str,
                  failed: bool = False) -> None:
    atomic_write_bytes(out_records, jsonl_bytes(
        record_rows(model, benchmark, category, imported.records), RECORD_COLUMNS))
    summary = imported.summary or {**dict.fromkeys(SUMMARY_FIELDS),
                                   **({"source": FAILED_SOURCE} if failed else {})}
    atomic_write_bytes(out_recorded, dumps({
        "model": model, "benchmark": benchmark, "category": category,
        **summary}).encode() + b"\n")
    write_jsonl(out_cases, imported.cases)
    write_jsonl(out, imported.trajectories)


def write_status(path: str, status: ImportStatus) -> None:
    atomic_write_bytes(path, dumps(status).encode() + b"\n")


def portable(reason: str) -> str:
    """`reason` with the working folder's absolute path left out (an artifact's bytes do not
    depend on where the project lies), on one line."""
    cwd = str(Path.cwd())
    return " ".join(reason.replace(cwd + "/", "").split())


def import_status(model: str, benchmark: str, category: str, imported: ImportedRun,
                  unselected: set[str]) -> ImportStatus:
    """The import's records per file by fate (`ImportFile`), in file order; `unselected`:
    the release's case ids the run does not select (their records are `not_selected`)."""
    outcome = {t.case_id: t.outcome for t in imported.trajectories}
    counts: dict[str, dict[str, int]] = {}
    for record in imported.records:
        row = counts.setdefault(record.file, dict.fromkeys(
            ("records", "scored", "excluded", "without_cell", "not_selected"), 0))
        row["records"] += 1
        if record.case_id is not None:
            row["scored" if outcome.get(record.case_id) in MODEL_OUTCOMES else "excluded"] += 1
        elif record.claimed_case in unselected:
            row["not_selected"] += 1
        else:
            row["without_cell"] += 1
    files = [ImportFile(file=file, **row) for file, row in counts.items()]
    return ImportStatus(model, benchmark, category, "imported",
                        None if files or not imported.notes else imported.notes[0], files,
                        sum(t.published is None for t in imported.trajectories))


def count_lines(label: str, status: ImportStatus, records: str) -> Sequence[str]:
    """The import's counts for the terminal: one line per file (its name only where there are
    several); none where the category has no file (its log and the run summary say so: the
    default run's BFCL panel has files of one category in six)."""
    lines = []
    for f in status.files:
        where = f" {f.file}:" if len(status.files) > 1 else ""
        text = (f"[toolcalib] {label}:{where} {f.records} records, {f.scored} scored, "
                f"{f.excluded} excluded, {f.without_cell} without a cell")
        if f.not_selected:
            text += f", {f.not_selected} not selected"
        if f.excluded or f.without_cell:
            text += f" (see {records})"
        lines.append(text)
    if missing := status.cases_without_record:
        lines.append(f"[toolcalib] {label}: {missing} selected case{'s' * (missing != 1)} "
                     "without a record (excluded)")
    return lines
