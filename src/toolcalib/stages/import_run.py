"""Stage: a published run (a model with backend `replay`) read by its benchmark's plugin into
one category's cases and trajectories (`Benchmark.import_run`), variant `baseline`, the
provenance of each record it read (`records.Published`, one JSON line each), and the run's own
headline for the category as recorded (`<category>.recorded.json`, `ImportedRun.summary`).

The outputs are written only when the whole import succeeded: a file of another shape stops
with one line naming it (exit 2) and leaves none of them (stale ones removed first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark, settings
from toolcalib.config import model_options, parse_model_spec
from toolcalib.jsonio import atomic_write_bytes, dumps, read_records, write_jsonl
from toolcalib.metrics.published import RECORD_COLUMNS, record_rows
from toolcalib.metrics.rows import jsonl_bytes
from toolcalib.records import Case
from toolcalib.stages import log
from toolcalib.stages.generate import select

SUMMARY_FIELDS = ("file", "accuracy", "correct_count", "total_count", "source")
"""The recorded headline's fields (`ImportedRun.summary`; all null where none is recorded)."""


def run(model_spec: str, benchmark: str, category: str, source: str, out: str,
        out_cases: str, out_records: str, out_recorded: str, cases: str | None = None,
        limit: int | None = None,
        case_ids: list[str] | None = None,
        benchmark_options: dict[str, Any] | None = None) -> None:
    """`cases`: the release's cases of `category` (selected by `limit` / `case_ids`), for a
    benchmark whose results files do not embed their own."""
    for path in (out, out_cases, out_records, out_recorded):
        Path(path).unlink(missing_ok=True)
    spec = parse_model_spec(model_spec)
    options = model_options(ReplayOptions, spec)
    given = [] if cases is None else select(read_records(cases, Case), cases, limit, case_ids)
    bench = get_benchmark(benchmark)
    imported = bench.import_run(source, options, spec.name, category, given,
                                settings(bench.case_settings, benchmark_options))
    for note in imported.notes:
        log(f"{spec.name}/{benchmark}/{category}: {note}")
    atomic_write_bytes(out_records, jsonl_bytes(
        record_rows(spec.name, benchmark, category, imported.records), RECORD_COLUMNS))
    atomic_write_bytes(out_recorded, dumps({
        "model": spec.name, "benchmark": benchmark, "category": category,
        **(imported.summary or dict.fromkeys(SUMMARY_FIELDS))}).encode() + b"\n")
    write_jsonl(out_cases, imported.cases)
    write_jsonl(out, imported.trajectories)
    scored = sum(t.outcome in ("completed", "step_cap") for t in imported.trajectories)
    log(f"{spec.name}/{benchmark}/{category}: {len(imported.trajectories)} trajectories "
        f"({scored} with a model outcome) -> {out}; cases -> {out_cases}; "
        f"{len(imported.records)} records -> {out_records}")
