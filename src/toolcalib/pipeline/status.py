"""`toolcalib status`: what a run left in `results/`, per model and benchmark: cases scored,
cases excluded by reason, generate jobs that failed (and so wrote no output) and where to look.
Snakemake prints the same summary when it ends (the Snakefile's `onsuccess`/`onerror`); the
command exits 1 while a generate job has failed requests pending, else 0.

How a job's state is decided, from the files alone (a generate job writes its trajectories
only when it succeeds, and Snakemake keeps the log of a failed job):
  done     its trajectories exist: every line counted by outcome;
  failed   no trajectories, and its log ends with the generate stage's failed-requests
           message (`N of M cases of <label> failed ...`): a rerun asks only those requests;
  no output  no trajectories, a log without that message: still running, killed, or crashed
           before the end (its log's last line is shown);
  not run  neither file, for a job the workflow expects (given by the Snakefile's hook; the
           command alone lists only the jobs that left a file).

A published run's import (rule `import_run`) leaves a status file,
`published/<model>/<benchmark>/<category>.import.json`: imported (its records by fate: the
records without a cell are counted here) or failed, with the one-line reason its files could not
be read (that model has no cell of the category; every other job runs). Without a status file an
import is `not run`, or `no output` where its log (`logs/import_run/...`) shows it crashed. The
command exits 1 while an import has failed, as while a generate job has failed requests.

A trajectory's outcome is read from its line without decoding the conversation: the records are
written in field order (`case_id`, `benchmark`, `category`, `model`, `model_identity`,
`variant`, `outcome`, ...), so the first `"outcome":"` of a line is the trajectory's (a string
value holds its quotes escaped; no identity has an `outcome` key); a line where it is not found
early is decoded in full. Standard library only, so it stays well under a second.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from toolcalib.records import MODEL_OUTCOMES, OUTCOMES

Job = tuple[str, str, str, str]
"""(model, variant, benchmark, category): one generate job."""
Import = tuple[str, str, str]
"""(model, benchmark, category): one published run's import."""
FAILED = re.compile(r"toolcalib generate: error: (?P<failed>\d+) of (?P<total>\d+) cases of \S+ "
                    r"failed: .*?\(last error: (?P<error>.*)\)\. Every answer received")
"""The failed-requests message of `toolcalib.stages.generate` (its FAILED and
`failure_message`)."""
OUTCOME = b'"outcome":"'
SCAN = 1 << 16
"""Bytes of a line searched for the outcome before it is decoded in full."""
EXCERPT = 160
SHOWN = 12
"""Lines of each listing (failed jobs, cells with excluded cases) before `... N more`."""


@dataclass
class JobState:
    job: Job
    trajectories: Path
    log: Path
    state: str = "not run"
    outcomes: Counter[str] = field(default_factory=Counter)
    first_error: dict[str, str] = field(default_factory=dict)
    """The first case's error text per excluded outcome."""
    failed: int = 0
    total: int = 0
    error: str = ""
    """Failed: the last error; no output: the log's last line."""

    @property
    def label(self) -> str:
        return "/".join(self.job)


@dataclass
class ImportState:
    key: Import
    status: Path
    log: Path
    state: str = "not run"
    """`imported`, `failed`, `no output` (a log, no status: crashed) or `not run`."""
    reason: str = ""
    """Failed: why; no output: the log's last line; imported without a file: why."""
    records: int = 0
    without_cell: int = 0
    files: int = 0

    @property
    def label(self) -> str:
        return "/".join(self.key)

    @property
    def records_file(self) -> Path:
        return self.status.with_name(self.status.name.replace(".import.json",
                                                              ".records.jsonl"))


def collect_imports(results: str | Path = "results", expected: Iterable[Import] | None = None,
                    ) -> list[ImportState]:
    """The state of every expected import (default: every one that left a status file)."""
    results = Path(results)
    folder, logs = results / "published", results / "logs" / "import_run"
    if expected is not None:
        keys = sorted(set(expected))
    else:
        keys = sorted({(p.parts[-3], p.parts[-2], p.name.removesuffix(".import.json"))
                       for p in folder.glob("*/*/*.import.json")} if folder.is_dir() else set())
    states = []
    for key in keys:
        model, benchmark, category = key
        state = ImportState(key, folder / model / benchmark / f"{category}.import.json",
                            logs / model / benchmark / f"{category}.log")
        if state.status.is_file():
            data = json.loads(state.status.read_bytes())
            state.state, state.reason = data["status"], data.get("reason") or ""
            files = data.get("files") or []
            state.files = len(files)
            state.records = sum(f["records"] for f in files)
            state.without_cell = sum(f["without_cell"] for f in files)
        elif state.log.is_file():
            lines = [line for line in state.log.read_text(encoding="utf-8", errors="replace")
                     .splitlines() if line.strip()]
            state.state, state.reason = "no output", lines[-1] if lines else "(empty log)"
        states.append(state)
    return states


def read_outcomes(path: Path) -> tuple[Counter[str], dict[str, str]]:
    """Trajectories by outcome, and the first error text of each excluded outcome."""
    counts: Counter[str] = Counter()
    errors: dict[str, str] = {}
    with open(path, "rb") as handle:
        for line in handle:
            start = line.find(OUTCOME, 0, SCAN)
            end = line.find(b'"', start + len(OUTCOME)) if start >= 0 else -1
            outcome = line[start + len(OUTCOME):end].decode() if end >= 0 else None
            record = None
            if outcome not in OUTCOMES:
                if not line.strip():
                    continue
                record = json.loads(line)
                outcome = record["outcome"]
            counts[outcome] += 1
            if outcome not in MODEL_OUTCOMES and outcome not in errors:
                record = record or json.loads(line)
                errors[outcome] = str(record.get("error") or "")
    return counts, errors


def read_log(state: JobState) -> None:
    """A job without output: failed (the failed-requests message) or no output (last line)."""
    try:
        text = state.log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    matches = list(FAILED.finditer(text))
    if matches:  # the last, should a log hold two
        last = matches[-1]
        state.state, state.error = "failed", last["error"]
        state.failed, state.total = int(last["failed"]), int(last["total"])
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        state.state, state.error = "no output", lines[-1] if lines else "(empty log)"


def _jobs_on_disk(folder: Path, suffix: str) -> set[Job]:
    if not folder.is_dir():
        return set()
    jobs = set()
    for path in folder.glob(f"*/*/*/*{suffix}"):
        model, variant, benchmark = path.relative_to(folder).parts[:3]
        jobs.add((model, variant, benchmark, path.name.removesuffix(suffix)))
    return jobs


def collect(results: str | Path = "results", expected: Iterable[Job] | None = None,
            ) -> list[JobState]:
    """The state of every expected job (default: every job that left trajectories or a log)."""
    results = Path(results)
    trajectories, logs = results / "trajectories", results / "logs" / "generate"
    jobs = (sorted(set(expected)) if expected is not None else
            sorted(_jobs_on_disk(trajectories, ".jsonl") | _jobs_on_disk(logs, ".log")))
    states = []
    for job in jobs:
        model, variant, benchmark, category = job
        state = JobState(job, trajectories / model / variant / benchmark / f"{category}.jsonl",
                         logs / model / variant / benchmark / f"{category}.log")
        if state.trajectories.is_file():
            state.state = "done"
            state.outcomes, state.first_error = read_outcomes(state.trajectories)
        elif state.log.is_file():
            read_log(state)
        states.append(state)
    return states


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[:EXCERPT - 3] + "..."


def _relative(path: str) -> str:
    """`path` below the current folder as a relative path, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _bounded(lines: list[str], more: str, head: str | None = None) -> list[str]:
    """`lines` (after `head`, if any), at most `SHOWN` of them, then how many more."""
    shown = lines if len(lines) <= SHOWN else \
        [*lines[:SHOWN], f"  ... and {len(lines) - SHOWN} more {more}"]
    return shown if head is None else [head, *shown]


def render(states: list[JobState], results: str | Path = "results",
           snakemake_log: str | Iterable[str] | None = None,
           imports: list[ImportState] | None = None) -> str:
    """The summary: a table per model and benchmark, then the failed jobs and the cells with
    excluded cases, each with the file to read; then the published runs' imports (records
    without a cell, each failed import with its reason), a last line where one failed."""
    results = Path(results)
    imports = imports or []
    if not states and not imports:
        return f"[toolcalib] status: no generate job has left a file under {results}/"
    failed_imports = {state.key for state in imports if state.state == "failed"}
    for state in states:  # an import that failed left empty trajectories, not a done job
        model, variant, benchmark, category = state.job
        if variant == "baseline" and (model, benchmark, category) in failed_imports:
            state.state = "import failed"
    groups: dict[tuple[str, str], list[JobState]] = {}
    for state in states:
        groups.setdefault((state.job[0], state.job[2]), []).append(state)
    rows = [["model", "benchmark", "jobs done", "cases", "scored", "excluded (by reason)",
             "failed jobs (cases)", "other jobs without output"]]
    for (model, benchmark), group in groups.items():
        outcomes = sum((s.outcomes for s in group), Counter())
        excluded = ", ".join(f"{name} {outcomes[name]}" for name in OUTCOMES
                             if name not in MODEL_OUTCOMES and outcomes[name])
        failed = [s for s in group if s.state == "failed"]
        waiting = Counter(s.state for s in group
                          if s.state in ("no output", "not run", "import failed"))
        rows.append([model, benchmark, f"{sum(s.state == 'done' for s in group)}/{len(group)}",
                     str(sum(outcomes.values())),
                     str(sum(outcomes[name] for name in MODEL_OUTCOMES)), excluded or "-",
                     f"{len(failed)} ({sum(s.failed for s in failed)})" if failed else "-",
                     ", ".join(f"{n} {name}" for name, n in sorted(waiting.items())) or "-"])
    lines = [f"[toolcalib] status of {results}/ (generate jobs: trajectories and logs)",
             *_table(rows)]
    failed = [s for s in states if s.state == "failed"]
    if failed:
        lines += _bounded([f"  {s.label}: {s.failed} of {s.total} cases failed; last error: "
                           f"{_short(s.error)}\n    log: {s.log}" for s in failed],
                          "(see the logs)",
                          f"failed generate jobs: {sum(s.failed for s in failed)} cases whose "
                          "requests failed, no output written; every answer received is in the "
                          "response store, so rerunning the same command asks only the failed "
                          "requests:")
    broken = [s for s in states if s.state == "no output"]
    if broken:
        lines.append("generate jobs without output and without a failed-requests message "
                     "(running, killed or crashed):")
        lines += _bounded([f"  {s.label}: {_short(s.error)}\n    log: {s.log}" for s in broken],
                          "(see the logs)")
    cells = [s for s in states if any(s.outcomes[name] for name in OUTCOMES
                                      if name not in MODEL_OUTCOMES)]
    if cells:
        lines.append("cells with excluded cases (in no denominator; `error` and `outcome` of "
                     "each case in its trajectories):")
        lines += _bounded([
            f"  {s.label}: " + ", ".join(
                f"{name} {s.outcomes[name]} (first: {_short(s.first_error.get(name, ''))})"
                for name in OUTCOMES if name not in MODEL_OUTCOMES and s.outcomes[name])
            + f"\n    trajectories: {s.trajectories}" for s in cells], "(results/metrics/)")
    lines += _import_lines(imports)
    look = [f"per cell: {results}/metrics/triples.csv (n, n_excluded, n_error, "
            f"n_context_overflow)"]
    if (results / "report" / "index.html").is_file():
        look.append(f"report: {results}/report/index.html")
    logs = [snakemake_log] if isinstance(snakemake_log, str) else list(snakemake_log or ())
    if logs:
        look.append(f"Snakemake's log: {', '.join(map(_relative, logs))}")
    lines.append("; ".join(look))
    if failed_imports:
        lines.append(f"[toolcalib] {len(failed_imports)} published import(s) failed (listed "
                     "above, and first in the report: \"Imports that failed\"); `toolcalib "
                     "status` exits 1 until their files are fixed")
    return "\n".join(lines)


def _import_lines(imports: list[ImportState]) -> list[str]:
    """The imports' part of the summary: counts, records without a cell, failures."""
    if not imports:
        return []
    states = Counter(state.state for state in imports)
    empty = sum(state.state == "imported" and not state.files for state in imports)
    head = (f"published imports: {states['imported']} of {len(imports)} imported"
            + (f" ({empty} without a file for their category)" if empty else ""))
    head += "".join(f", {states[name]} {name}" for name in ("failed", "no output", "not run")
                    if states[name])
    lines = [head]
    cells = [s for s in imports if s.without_cell]
    if cells:
        lines += _bounded([f"  {s.label}: {s.without_cell} of {s.records} records\n"
                           f"    records: {s.records_file}" for s in cells],
                          "(results/metrics/published.csv)",
                          "records without a cell (no task or case to score them on; each "
                          f"with its reason in its records file): "
                          f"{sum(s.without_cell for s in cells)}")
    failed = [s for s in imports if s.state == "failed"]
    if failed:
        lines.append("failed imports (bad input in the published files: that model has no "
                     "cell of the category, no other job waits on it; fix the file and rerun: "
                     "only its jobs run again):")
        lines += [f"  {s.label}: {s.reason}\n    status: {s.status}" for s in failed]
    broken = [s for s in imports if s.state == "no output"]
    if broken:
        lines.append("imports without output (running, killed or crashed):")
        lines += _bounded([f"  {s.label}: {_short(s.reason)}\n    log: {s.log}"
                           for s in broken], "(see the logs)")
    return lines


def summary(results: str | Path = "results", expected: Iterable[Job] | None = None,
            snakemake_log: str | Iterable[str] | None = None,
            imports: Iterable[Import] | None = None) -> str:
    return render(collect(results, expected), results, snakemake_log,
                  collect_imports(results, imports))


def print_summary(expected: Iterable[Job] | None = None,
                  snakemake_log: str | Iterable[str] | None = None,
                  results: str = "results", imports: Iterable[Import] | None = None) -> None:
    """The summary on stderr, as Snakemake's own messages (the Snakefile's hooks call this with
    the jobs and published-run imports the workflow expects and Snakemake's log files). Never
    raises: a summary that fails says why in one line instead of changing how Snakemake
    ends."""
    try:
        text = summary(results, expected, snakemake_log, imports)
    except Exception as exc:  # a hook must not turn a finished run into a crash
        text = f"[toolcalib] status: no summary ({type(exc).__name__}: {exc})"
    print(text, file=sys.stderr, flush=True)


def main_status(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="toolcalib status", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="results", help="the results folder (results)")
    args = parser.parse_args(argv)
    states = collect(args.results)  # exit status 1 while a generate job has failed requests
    imports = collect_imports(args.results)  # or while an import has failed
    print(render(states, args.results, imports=imports))
    failed = any(s.state == "failed" for s in states) or \
        any(s.state == "failed" for s in imports)
    return 1 if failed else 0
