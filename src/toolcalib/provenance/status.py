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


def _bounded(lines: list[str], more: str) -> list[str]:
    if len(lines) <= SHOWN:
        return lines
    return [*lines[:SHOWN], f"  ... and {len(lines) - SHOWN} more {more}"]


def render(states: list[JobState], results: str | Path = "results",
           snakemake_log: str | Iterable[str] | None = None) -> str:
    """The summary: a table per model and benchmark, then the failed jobs and the cells with
    excluded cases, each with the file to read."""
    results = Path(results)
    if not states:
        return f"[toolcalib] status: no generate job has left a file under {results}/"
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
        waiting = Counter(s.state for s in group if s.state in ("no output", "not run"))
        rows.append([model, benchmark, f"{sum(s.state == 'done' for s in group)}/{len(group)}",
                     str(sum(outcomes.values())),
                     str(sum(outcomes[name] for name in MODEL_OUTCOMES)), excluded or "-",
                     f"{len(failed)} ({sum(s.failed for s in failed)})" if failed else "-",
                     ", ".join(f"{n} {name}" for name, n in sorted(waiting.items())) or "-"])
    lines = [f"[toolcalib] status of {results}/ (generate jobs: trajectories and logs)",
             *_table(rows)]
    failed = [s for s in states if s.state == "failed"]
    if failed:
        lines.append(f"failed generate jobs: {sum(s.failed for s in failed)} cases whose requests"
                     f" failed, no output written; every answer received is in the response "
                     f"store, so rerunning the same command asks only the failed requests:")
        lines += _bounded([f"  {s.label}: {s.failed} of {s.total} cases failed; last error: "
                           f"{_short(s.error)}\n    log: {s.log}" for s in failed],
                          "(see the logs)")
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
    look = [f"per cell: {results}/metrics/triples.csv (n, n_excluded, n_error, "
            f"n_context_overflow)"]
    if (results / "report" / "index.html").is_file():
        look.append(f"report: {results}/report/index.html")
    logs = [snakemake_log] if isinstance(snakemake_log, str) else list(snakemake_log or ())
    if logs:
        look.append(f"Snakemake's log: {', '.join(map(_relative, logs))}")
    lines.append("; ".join(look))
    return "\n".join(lines)


def summary(results: str | Path = "results", expected: Iterable[Job] | None = None,
            snakemake_log: str | Iterable[str] | None = None) -> str:
    return render(collect(results, expected), results, snakemake_log)


def print_summary(expected: Iterable[Job] | None = None,
                  snakemake_log: str | Iterable[str] | None = None,
                  results: str = "results") -> None:
    """The summary on stderr, as Snakemake's own messages (the Snakefile's hooks call this with
    the jobs the workflow expects and Snakemake's log files). Never raises: a summary that
    fails says why in one line instead of changing how Snakemake ends."""
    try:
        text = summary(results, expected, snakemake_log)
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
    print(render(states, args.results))
    return 1 if any(s.state == "failed" for s in states) else 0
