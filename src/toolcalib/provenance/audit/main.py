"""`toolcalib audit`: where does one number of `results/metrics/triples.csv` come from?

Read-only. For one cell (model, variant, benchmark, category, and with `--gold` the gold class,
needed where a category has several: a τ² domain) and one metric it recomputes the
number from `results/metrics/per_case.parquet` (numerator and denominator case ids), checks
every artifact on the cell's path against the md5 recorded in `dvc.lock`, and lists the
producing commands, the model's identity, the config and the package versions of
`results/manifest.json`. `--case ID` replays one case: messages, emissions, calls, results,
action classes and the verdict. Exit status: 0 when everything agrees, 1 when the recomputed
number or an artifact disagrees with the record, 2 when an input is missing or the cell unknown.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from toolcalib.jsonio import InputError, builtins, parse_line, sha256_file
from toolcalib.manifest import machine
from toolcalib.metrics.inputs import read_csv_table
from toolcalib.metrics.published import PUBLISHED_SCHEMA, disagreements, file_lines
from toolcalib.metrics.rows import ACC_WITHOUT_GOLD, DIGITS, GOLD_WITHOUT_ACC, RATES, STRUCTURAL
from toolcalib.metrics.triples import TRIPLE_SCHEMA
from toolcalib.metrics.wilson import wilson
from toolcalib.records import Trajectory
from toolcalib.trajdigest import dvc_cached, explain_trajectory

KEYS = ("model", "variant", "benchmark", "category")
PLURAL = {"model": "models", "variant": "variants", "benchmark": "benchmarks",
          "category": "categories"}
TRIPLES = "results/metrics/triples.csv"
PER_CASE = "results/metrics/per_case.parquet"
PUBLISHED = "results/metrics/published.csv"
MANIFEST = "results/manifest.json"
TRAJECTORIES = "results/trajectories/"
LOCK = "dvc.lock"
HINT = "run `dvc repro` or `snakemake --cores 8` first (or `dvc pull` for a recorded run)"
RESULT_CHARS = 300
CMD_CHARS = 240
"""Execution results longer than this are cut, with a marker saying how much was cut."""

ARTIFACTS: tuple[tuple[str, str], ...] = (
    ("release", "results/raw/{benchmark}/{release}"),
    ("weights", "results/models/{model}"),
    ("cases", "results/cases/{benchmark}/{category}.jsonl"),
    ("gold", "results/gold/{benchmark}/{category}.jsonl"),
    ("trajectories", "results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("actions", "results/actions/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("scores", "results/scores/{model}/{variant}/{benchmark}/{category}.jsonl"),
    ("run_per_case", "results/runs/{model}/{variant}/{benchmark}/per_case.jsonl"),
    ("triples", TRIPLES),
    ("per_case", PER_CASE),
    ("manifest", MANIFEST),
)
"""Every artifact on a cell's path, upstream first (the layout of workflow/rules/common.smk);
`weights` only when the run has a model stage for the model."""

_SCORED = pl.col("scored").fill_null(False)
_PASSED = pl.col("passed").fill_null(False)
_GOLD = pl.col("gold_emitted").fill_null(False)
_OUTCOME = pl.col("outcome")
COUNT_CASES: dict[str, tuple[str, pl.Expr]] = {
    "n": ("scored cases (the denominator of every rate)", _SCORED),
    "n_excluded": ("cases with an infrastructure outcome (in no denominator)", ~_SCORED),
    "n_context_overflow": ("cases ended by context overflow", _OUTCOME == "context_overflow"),
    "n_error": ("cases ended by an infrastructure error", _OUTCOME == "error"),
    "n_step_cap": ("scored cases ended by the step cap", _SCORED & (_OUTCOME == "step_cap")),
    "n_probed": ("scored cases where the variant's probe fired",
                 _SCORED & (pl.col("probes_fired") > 0)),
    ACC_WITHOUT_GOLD: ("scored cases that passed without emitting the gold class (Acc>GAR)",
                       _SCORED & _PASSED & ~_GOLD),
    GOLD_WITHOUT_ACC: ("scored cases that emitted the gold class and failed (GAR>Acc)",
                       _SCORED & ~_PASSED & _GOLD),
}
"""Each count of triples.csv as a selection of per-case rows (the cases it counts)."""


class AuditError(Exception):
    """A missing input or an unknown cell, metric or case (exit status 2)."""


def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort key reading digit runs as numbers (`x_2` before `x_10`); ties broken by the text."""
    parts = re.split(r"(\d+)", text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def md5_file(path: Path) -> str:
    """Plain md5 of the bytes, as DVC 3 records a file (`hash: md5`)."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


SNAKEMAKE_MARKER = ".snakemake_timestamp"
"""Snakemake's empty marker in its `directory()` outputs; `.dvcignore` makes DVC skip it."""


def md5_dir(path: Path) -> str:
    """DVC's `.dir` hash: md5 of the JSON list of {md5, relpath} of every file, by relpath
    (Snakemake's marker left out, as DVC leaves it out)."""
    entries = sorted(
        ({"md5": md5_file(f), "relpath": f.relative_to(path).as_posix()}
         for f in path.rglob("*") if f.is_file() and f.name != SNAKEMAKE_MARKER),
        key=lambda entry: entry["relpath"],
    )
    data = json.dumps(entries, sort_keys=True).encode("utf-8")
    return hashlib.md5(data).hexdigest() + ".dir"


def dvc_md5(path: Path) -> str | None:
    """The md5 DVC would record for `path` now; None when it does not exist."""
    if path.is_dir():
        return md5_dir(path)
    return md5_file(path) if path.is_file() else None


def truncate(text: str, limit: int = RESULT_CHARS) -> str:
    """`text` cut to `limit` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated: {len(text) - limit} more chars]"


def shorten(command: str, limit: int = CMD_CHARS) -> str:
    """A command line longer than `limit` with each run of more than three path arguments cut
    to its first and last (the aggregate stage lists hundreds of paths) and any word longer
    than 80 characters cut (a model spec's JSON), each cut saying what it left out."""
    if len(command) <= limit:
        return command
    out: list[str] = []
    paths: list[str] = []

    def flush() -> None:
        out.extend(paths if len(paths) <= 3 else
                   [paths[0], f"[... {len(paths) - 2} more paths ...]", paths[-1]])
        paths.clear()

    for word in command.split(" "):
        if "/" in word and not word.startswith("-") and not set(word) & set("{'\""):
            paths.append(word)
            continue
        flush()
        out.append(word if len(word) <= 80 else f"{word[:60]}...[{len(word) - 60} more chars]")
    flush()
    return " ".join(out)


def _require(root: Path, relative: str, what: str) -> Path:
    path = root / relative
    if not path.exists():
        raise AuditError(f"{relative} ({what}) is missing under {root}: {HINT}")
    return path


def read_lock(root: Path) -> dict[str, dict[str, Any]]:
    path = root / LOCK
    if not path.is_file():
        raise AuditError(
            f"{LOCK} (every stage's command and hashes) is missing under {root}: run "
            "`dvc repro`, or `snakemake --cores 8` then `dvc commit --force`, first"
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stages = (yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}).get("stages")
    return dict(stages or {})


def _key_text(cell: Sequence[str]) -> str:
    return "/".join(cell)


def metrics_of(columns: Sequence[str]) -> list[str]:
    """The auditable metrics of a triples table: its rates (the structural reading last),
    then its counts."""
    rates = [rate for rate in [*RATES, STRUCTURAL] if rate in columns and f"{rate}_k" in columns]
    return rates + [count for count in COUNT_CASES if count in columns]


def resolve_metric(name: str, columns: Sequence[str]) -> str:
    """`name` as an auditable metric (`gar_k`, `gar_lo`, `gar_hi` mean `gar`)."""
    valid = metrics_of(columns)
    base = re.sub(r"_(k|lo|hi)$", "", name) if name not in valid else name
    if base not in valid:
        raise AuditError(f"unknown metric {name!r}; metrics: {', '.join(valid)}")
    return base


def _cell_row(triples: pl.DataFrame, cell: tuple[str, str, str, str],
              gold: str | None = None) -> dict[str, Any]:
    """The cell's row of the triples (of gold class `gold`, required where the cell has
    several); an unknown cell or gold class names the valid values."""
    rows = triples
    for key, value in zip(KEYS, cell, strict=True):
        narrowed = rows.filter(pl.col(key) == value)
        if narrowed.height == 0:
            within = "" if rows is triples else f" (with {_key_text(cell[:KEYS.index(key)])})"
            options = "; ".join(
                f"{PLURAL[name]}: "
                f"{', '.join(sorted(set(triples[name].to_list()), key=natural_key))}"
                for name in KEYS
            )
            raise AuditError(
                f"no cell {_key_text(cell)} in {TRIPLES}: unknown {key} {value!r}{within}, "
                f"valid: {', '.join(sorted(set(rows[key].to_list()), key=natural_key))}; "
                f"{options}; metrics: {', '.join(metrics_of(triples.columns))}"
            )
        rows = narrowed
    golds = sorted(rows["gold_action"].to_list())
    if gold is not None:
        rows = rows.filter(pl.col("gold_action") == gold)
        if rows.height == 0:
            raise AuditError(f"no gold class {gold!r} in cell {_key_text(cell)} of {TRIPLES}, "
                             f"valid: {', '.join(golds)}")
    if rows.height > 1:
        raise AuditError(f"cell {_key_text(cell)} has {rows.height} gold classes in {TRIPLES}"
                         f" ({', '.join(golds)}): choose one with --gold")
    return rows.row(0, named=True)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return round(a, DIGITS) == round(b, DIGITS)


def recompute(per_case: pl.DataFrame, cell: tuple[str, str, str, str], metric: str,
              row: dict[str, Any], gold: str | None = None) -> dict[str, Any]:
    """The metric recomputed from the cell's per-case rows (of gold class `gold`, if given),
    next to the table's values."""
    rows = per_case.filter(
        pl.all_horizontal(pl.col(k) == v for k, v in zip(KEYS, cell, strict=True))
    )
    if gold is not None:
        rows = rows.filter(pl.col("gold_action") == gold)

    def ids(selection: pl.Expr) -> list[str]:
        picked = rows.filter(selection.fill_null(False))["case_id"].to_list()
        return sorted(picked, key=natural_key)

    problems: list[str] = []
    if metric in RATES or metric == STRUCTURAL:
        # the structural reading's denominator: the scored cases that have one (`_n`)
        column = RATES.get(metric, "structural_hit")
        among = _SCORED if metric in RATES else _SCORED & pl.col(column).is_not_null()
        numerator, denominator = ids(among & pl.col(column)), ids(among)
        k, n = len(numerator), len(denominator)
        value = round(k / n, DIGITS) if n else None
        low, high = (None if x is None else round(x, DIGITS) for x in wilson(k, n))
        table = {"value": row[metric], "k": row[f"{metric}_k"],
                 "n": row["n" if metric in RATES else f"{metric}_n"],
                 "lo": row[f"{metric}_lo"], "hi": row[f"{metric}_hi"]}
        mine = {"value": value, "k": k, "n": n, "lo": low, "hi": high}
        for name in ("k", "n", "value", "lo", "hi"):
            if not _same(mine[name], table[name]):
                problems.append(f"{metric}: recomputed {name} {mine[name]} != table "
                                f"{table[name]} at {_key_text(cell)}")
        definition = (f"{metric} = {metric}_k / n: share of scored cases whose per-case "
                      f"`{column}` is true" if metric in RATES else
                      f"{metric} = {metric}_k / {metric}_n: share of the scored cases with a "
                      f"`{column}` (the published structural reading) where it is true")
        return {
            "name": metric, "kind": "rate", "per_case_column": column,
            "definition": definition, "table": table, "recomputed": mine,
            "matches": not problems, "problems": problems,
            "numerator_cases": numerator, "denominator_cases": denominator,
        }
    description, selection = COUNT_CASES[metric]
    counted, population = ids(selection), ids(pl.lit(True))
    if len(counted) != row[metric]:
        problems.append(f"{metric}: recomputed {len(counted)} != table {row[metric]} at "
                        f"{_key_text(cell)}")
    return {
        "name": metric, "kind": "count", "per_case_column": None,
        "definition": f"{metric}: {description}",
        "table": {"value": row[metric]},
        "recomputed": {"value": len(counted), "k": len(counted), "n": len(population)},
        "matches": not problems, "problems": problems,
        "numerator_cases": counted, "denominator_cases": population,
    }


class _Hashes:
    """md5/sha256 of files under the root, each computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._md5: dict[str, str | None] = {}
        self._sha: dict[str, str | None] = {}

    def md5(self, relative: str) -> str | None:
        if relative not in self._md5:
            self._md5[relative] = dvc_md5(self.root / relative)
        return self._md5[relative]

    def sha256(self, relative: str) -> str | None:
        if relative not in self._sha:
            path = self.root / relative
            self._sha[relative] = sha256_file(path) if path.is_file() else None
        return self._sha[relative]


def _release_file(benchmark: str, manifest: dict[str, Any],
                  outs: dict[str, tuple[str, dict[str, Any]]]) -> str | None:
    entry = manifest.get("config", {}).get("benchmarks", {}).get(benchmark, {})
    if entry.get("file"):
        return str(entry["file"])
    prefix = f"results/raw/{benchmark}/"
    found = sorted(p.removeprefix(prefix) for p in outs if p.startswith(prefix))
    return found[0] if found else None


def is_trajectory(path: str, manifest: dict[str, Any]) -> bool:
    """Whether an output is a generate stage's trajectory file (the manifest digests it)."""
    return path in (manifest.get("trajectories") or {}) or path.startswith(TRAJECTORIES)


def explain(root: Path, path: str, recorded: str, manifest: dict[str, Any]) -> list[str]:
    """Why a file no longer matches its recorded md5: record by record for a trajectory whose
    recorded version is in DVC's cache, else from the manifest's digests of it."""
    committed = dvc_cached(root, recorded)
    if is_trajectory(path, manifest):
        return explain_trajectory(path, manifest, root / path, committed)
    if committed is None:
        return ["the recorded version is not in DVC's cache (`dvc pull` fetches it, "
                "`dvc checkout` restores it)"]
    return [f"the recorded version is in DVC's cache ({committed.relative_to(root)}): "
            "`dvc checkout` restores it"]


def machine_lines(recorded: dict[str, Any]) -> list[str]:
    """The committed manifest's machine next to this one's, when they differ."""
    here = machine()
    if {k: recorded.get(k) for k in here} == here:
        return [f"recorded and built on the same machine kind ({_machine_text(here)})"]
    return [f"recorded on {_machine_text(recorded)}, here {_machine_text(here)}"]


def _machine_text(facts: dict[str, Any]) -> str:
    return (f"{facts.get('cpu_capability') or 'unknown capability'} "
            f"({facts.get('processor') or 'unknown CPU'}, {facts.get('cpu_count')} CPUs)")


def provenance(hashes: _Hashes, cell: tuple[str, str, str, str], manifest: dict[str, Any],
               stages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every artifact on the cell's path against dvc.lock, and each producing stage."""
    outs: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, stage in stages.items():
        for out in stage.get("outs") or []:
            outs[out["path"]] = (name, out)
    fields = dict(zip(KEYS, cell, strict=True))
    fields["release"] = _release_file(cell[2], manifest, outs) or "<unknown release>"
    recorded_inputs = manifest.get("inputs", {})
    artifacts: list[dict[str, Any]] = []
    problems: list[str] = []
    for role, template in ARTIFACTS:
        path = template.format(**fields)
        if role == "weights" and path not in outs:
            continue
        stage_name, out = outs.get(path, (None, {}))
        recorded = out.get("md5")
        disk = hashes.md5(path)
        why: list[str] = []
        if disk is None:
            status = "missing"
            problems.append(f"{path} ({role}) is missing: {HINT}")
        elif recorded is None:
            status = "unrecorded"
            problems.append(f"{path} ({role}) is not recorded in {LOCK}: record the run with "
                            "`dvc commit --force` (or `dvc repro`)")
        elif disk != recorded:
            status = "modified"
            problems.append(f"{path} ({role}) does not match {LOCK}: md5 {disk} on disk, "
                            f"{recorded} recorded by stage {stage_name}")
            why = explain(hashes.root, path, recorded, manifest)
        else:
            status = "ok"
        stale = sorted(
            name for name, stage in stages.items()
            for dep in stage.get("deps") or []
            if dep.get("path") == path and recorded is not None and dep.get("md5") != recorded
        )
        if stale:
            problems.append(f"{path} ({role}): stage(s) {', '.join(stale)} recorded it with "
                            f"another md5 than its producer {stage_name} (`dvc status` shows "
                            "which are out of date)")
        sha = recorded_inputs.get(path)
        artifacts.append({
            "role": role, "path": path, "stage": stage_name, "md5_recorded": recorded,
            "md5_disk": disk, "status": status, "why": why, "recorded_differently_by": stale,
            "manifest_sha256": None if sha is None else
            ("ok" if hashes.sha256(path) == sha else "differs"),
        })
        if sha is not None and artifacts[-1]["manifest_sha256"] == "differs" and disk:
            problems.append(f"{path} ({role}) differs from the sha256 in {MANIFEST}")
    producing: list[dict[str, Any]] = []
    for name in dict.fromkeys(a["stage"] for a in artifacts if a["stage"]):
        stage = stages[name]
        code = [d for d in stage.get("deps") or [] if not d["path"].startswith("results/")]
        changed = sorted(d["path"] for d in code if hashes.md5(d["path"]) != d.get("md5"))
        producing.append({
            "name": name, "cmd": stage.get("cmd", ""),
            "outs": [o["path"] for o in stage.get("outs") or []
                     if any(o["path"] == a["path"] for a in artifacts)],
            "code_deps": len(code), "code_changed": changed,
        })
    modified = any(a["status"] == "modified" for a in artifacts)
    return {"lock": LOCK, "artifacts": artifacts, "stages": producing, "problems": problems,
            "machine": machine_lines(manifest.get("machine") or {}) if modified else []}


def run_context(manifest: dict[str, Any], cell: tuple[str, str, str, str]) -> dict[str, Any]:
    """Model identity, the config values that matter, package versions and code version."""
    config = manifest.get("config", {})
    entry = next((m for m in config.get("models", []) if m.get("name") == cell[0]), None)
    return {
        "model_identity": manifest.get("models", {}).get(cell[0]),
        "config": {
            "limit": config.get("limit"),
            "classifier": config.get("classifier"),
            "variants": config.get("variants"),
            "model": entry,
            "benchmark": config.get("benchmarks", {}).get(cell[2]),
        },
        "packages": manifest.get("packages", {}),
        "code": manifest.get("code", {}),
    }


def _read_trajectory(path: Path, case_id: str) -> tuple[Trajectory | None, list[str]]:
    """The case's trajectory (None if absent) and every case id the file holds."""
    seen: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            seen.append(json.loads(line).get("case_id"))
            if seen[-1] == case_id:
                try:
                    return parse_line(line, Trajectory, str(path), len(seen)), seen
                except InputError as error:
                    raise AuditError(f"{path}:{len(seen)}: not a trajectory record of this "
                                     f"toolcalib version: {error}") from error
    return None, seen


def _align_messages(trajectory: Trajectory) -> dict[int, list[dict[str, Any]]]:
    """Each turn's user/system messages, each tagged with the step index it came before (None:
    after the turn's last step), replaying how generation appended them: a turn's messages,
    then per step either the assistant reply and one tool message per result or, for a step
    the probe dropped, the one message the probe added."""
    messages = trajectory.messages
    position = 0
    out: dict[int, list[dict[str, Any]]] = {}

    def block() -> list[Any]:
        nonlocal position
        start = position
        while position < len(messages) and messages[position].role in ("user", "system"):
            position += 1
        return list(messages[start:position])

    def tag(turn: int, found: list[Any], dropped: list[int], then: int | None) -> None:
        # one probe message follows each dropped step; what precedes them opened the turn
        cut = max(len(found) - len(dropped), 0)
        befores = [dropped[0] if dropped else then] * cut + [
            (dropped + [then])[i + 1] for i in range(len(found) - cut)]
        out.setdefault(turn, []).extend(
            {"role": m.role, "content": m.content, "before_step": before}
            for m, before in zip(found, befores, strict=True))

    last = trajectory.turns[-1].index if trajectory.turns else None
    for trace in trajectory.turns:
        out.setdefault(trace.index, [])
        dropped: list[int] = []
        for step in trace.steps:
            if step.dropped:
                dropped.append(step.index)
                continue
            tag(trace.index, block(), dropped, step.index)
            dropped = []
            if position < len(messages) and messages[position].role == "assistant":
                position += 1
                while position < len(messages) and messages[position].role == "tool":
                    position += 1
        if dropped or not any(not step.dropped for step in trace.steps):
            tag(trace.index, block(), dropped, None)
    if last is not None and position < len(messages):
        out[last].extend({"role": m.role, "content": m.content, "before_step": None}
                         for m in messages[position:])
    return out


def _class(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"action": row["action"], "rule": row["rule"], "evidence": row["evidence"]}


def trajectory_id(case_id: str) -> str:
    """The trajectory a per-case row comes from: a unit of a case (`<case>#write2`, one per
    write call on τ²) is read from its case's trajectory."""
    return case_id.partition("#")[0]


def case_detail(root: Path, cell: tuple[str, str, str, str], case_id: str,
                metric: dict[str, Any]) -> dict[str, Any]:
    """One case in full: per turn its messages, steps and classes; gold; the verdict; whether
    it is in the `metric`'s numerator and denominator (as `recompute` returns them)."""
    fields = dict(zip(KEYS, cell, strict=True))
    paths = {role: template.format(**fields, release="") for role, template in ARTIFACTS
             if role in ("trajectories", "actions", "scores")}
    for role, relative in paths.items():
        _require(root, relative, role)
    trajectory, seen = _read_trajectory(root / paths["trajectories"], trajectory_id(case_id))
    if trajectory is None:
        known = ", ".join(sorted(seen, key=natural_key)) or "(none)"
        raise AuditError(f"no case {case_id!r} in {paths['trajectories']}; cases of "
                         f"{_key_text(cell)}: {known}")
    rows = _case_lines(root / paths["actions"], trajectory.case_id)
    verdict = next(iter(_case_lines(root / paths["scores"], trajectory.case_id)), None)
    turn_rows = {r["turn"]: r for r in rows if r["level"] == "turn"}
    step_rows = {(r["turn"], r["step"]): r for r in rows if r["level"] != "turn"}
    traces = {trace.index: trace for trace in trajectory.turns}
    inputs = _align_messages(trajectory)
    turns: list[dict[str, Any]] = []
    for index in sorted(set(turn_rows) | set(traces)):
        trace, turn_row = traces.get(index), turn_rows.get(index)
        steps = []
        for step in trace.steps if trace else []:
            emission = step.emission
            steps.append({
                "index": step.index, "dropped": step.dropped, "text": emission.text,
                "calls": [{"name": c.name, "arguments": c.arguments} for c in emission.tool_calls],
                "structured": emission.structured, "parse": emission.parse,
                "parse_error": emission.parse_error,
                "results": [truncate(result) for result in step.results],
                "class": _class(step_rows.get((index, step.index))),
            })
        turns.append({
            "index": index,
            "gold_action": turn_row["gold_action"] if turn_row else None,
            "is_gold_turn": bool(turn_row and turn_row["is_gold_turn"]),
            "reached": trace is not None, "ended": trace.ended if trace else None,
            "class": _class(turn_row),
            "probes_fired": turn_row.get("probes_fired", 0) if turn_row else 0,
            "messages": inputs.get(index, []), "steps": steps,
        })
    gold_turn = next((t["index"] for t in turns if t["is_gold_turn"]), None)
    details = verdict.get("details") if verdict else None
    return {
        "case_id": case_id,
        "outcome": trajectory.outcome,
        "error": trajectory.error,
        "gold_action": next((t["gold_action"] for t in turns if t["is_gold_turn"]), None),
        "gold_turn": gold_turn,
        "in_numerator": case_id in metric["numerator_cases"],
        "in_denominator": case_id in metric["denominator_cases"],
        "verdict": None if verdict is None else {
            "scored": verdict["scored"], "passed": verdict["passed"],
            "error_type": verdict.get("error_type"), "error_message": verdict.get("error_message"),
            "failed_turn": verdict.get("failed_turn"),
            "details": json.loads(details) if details else None,
        },
        "interventions": [builtins(i) for i in trajectory.interventions],
        "turns": turns,
    }


def _case_lines(path: Path, case_id: str) -> list[dict[str, Any]]:
    """The rows of one case in a JSON-lines table (an action or score table)."""
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [row for row in rows if row["case_id"] == case_id]


@dataclass
class Run:
    """The recorded run an audit reads: tables, manifest, dvc.lock stages, file hashes."""

    root: Path
    triples: pl.DataFrame
    per_case: pl.DataFrame
    manifest: dict[str, Any]
    stages: dict[str, dict[str, Any]]
    hashes: _Hashes
    published: pl.DataFrame | None = None
    """The published runs' table (`metrics.published`), where the run has one."""


def load_run(root: str | Path) -> Run:
    """Read what every audit of the run at `root` needs (raises AuditError when missing)."""
    root = Path(root)
    triples_path = _require(root, TRIPLES, "the triples table")
    per_case_path = _require(root, PER_CASE, "the per-case table")
    stages = read_lock(root)
    manifest_path = root / MANIFEST
    return Run(
        root=root,
        # typed: a rate column with no value (every cell n = 0) is a float column, not text
        triples=pl.read_csv(triples_path, infer_schema_length=None,
                            schema_overrides=TRIPLE_SCHEMA),
        per_case=pl.read_parquet(per_case_path),
        manifest=(json.loads(manifest_path.read_text(encoding="utf-8"))
                  if manifest_path.is_file() else {}),
        stages=stages,
        hashes=_Hashes(root),
        published=(read_csv_table(root / PUBLISHED, PUBLISHED_SCHEMA)
                   if (root / PUBLISHED).is_file() else None),
    )


def audit(run: Run | str | Path, model: str, variant: str, benchmark: str, category: str,
          metric: str, case: str | None = None, gold: str | None = None) -> dict[str, Any]:
    """The whole audit of one cell's metric (of gold class `gold`, required where the cell
    has several) as a JSON-ready dict (key order is fixed).

    `run` is a project root or a loaded Run (to audit many cells, hashing each file once).
    """
    run = run if isinstance(run, Run) else load_run(run)
    cell = (model, variant, benchmark, category)
    row = _cell_row(run.triples, cell, gold)
    metric = resolve_metric(metric, run.triples.columns)
    numbers = recompute(run.per_case, cell, metric, row, row["gold_action"] if gold else None)
    chain = provenance(run.hashes, cell, run.manifest, run.stages)
    context = run_context(run.manifest, cell)
    problems = [*numbers["problems"], *chain["problems"]]
    if run.manifest and context["model_identity"] is None:
        problems.append(f"model {model} has no identity in {MANIFEST}")
    report: dict[str, Any] = {
        "cell": dict(zip(KEYS, cell, strict=True)),
        "gold_action": row.get("gold_action"),
        "metric": {k: v for k, v in numbers.items() if k != "problems"},
        "provenance": {k: v for k, v in chain.items() if k != "problems"},
        **context,
    }
    if run.published is not None:
        mine = run.published.filter((pl.col("model") == model)
                                    & (pl.col("benchmark") == benchmark)
                                    & (pl.col("category") == category))
        if mine.height:
            report["published"] = {
                "agreement": file_lines(mine),
                "listed": disagreements(mine).drop("model").to_dicts()}
    if case is not None:
        report["case"] = case_detail(run.root, cell, case, numbers)
    report["ok"] = not problems
    report["problems"] = problems
    return report


# -- text rendering ------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    return "-" if value is None else str(value)


def _ids(ids: list[str], indent: str) -> list[str]:
    if not ids:
        return [f"{indent}(none)"]
    lines, line = [], indent
    for case_id in ids:
        if len(line) + len(case_id) + 1 > 100 and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += case_id + " "
    return [*lines, line.rstrip()]


def _block(prefix: str, text: str) -> str:
    """`prefix` then `text`, its later lines indented to line up under the first."""
    return prefix + text.replace("\n", "\n" + " " * len(prefix))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _render_metric(m: dict[str, Any]) -> list[str]:
    table, mine = m["table"], m["recomputed"]
    verdict = "MATCHES the table" if m["matches"] else "DIFFERS from the table"
    lines = [f"metric      {m['definition']}"]
    if m["kind"] == "rate":
        lines += [
            f"table       {m['name']} = {_fmt(table['value'])}  (k={table['k']}, "
            f"n={table['n']})  95% Wilson [{_fmt(table['lo'])}, {_fmt(table['hi'])}]",
            f"recomputed  {m['name']} = {mine['k']}/{mine['n']} = {_fmt(mine['value'])}  "
            f"95% Wilson [{_fmt(mine['lo'])}, {_fmt(mine['hi'])}]  from {PER_CASE}: {verdict}",
            f"numerator   k={mine['k']} scored cases with {m['per_case_column']}:",
            *_ids(m["numerator_cases"], "              "),
            f"denominator n={mine['n']} scored cases:",
            *_ids(m["denominator_cases"], "              "),
        ]
    else:
        lines += [
            f"table       {m['name']} = {table['value']}",
            f"recomputed  {m['name']} = {mine['value']} (of {mine['n']} cases in the cell) "
            f"from {PER_CASE}: {verdict}",
            f"cases       {mine['value']}:",
            *_ids(m["numerator_cases"], "              "),
            f"cell cases  {mine['n']}:",
            *_ids(m["denominator_cases"], "              "),
        ]
    return lines


def _render_provenance(p: dict[str, Any]) -> list[str]:
    lines = [f"provenance  (md5 recorded in {p['lock']} vs the file on disk)"]
    width = max((len(a["path"]) for a in p["artifacts"]), default=0)
    for a in p["artifacts"]:
        extra = "" if a["manifest_sha256"] is None else f"  manifest sha256 {a['manifest_sha256']}"
        if a["recorded_differently_by"]:
            extra += f"  recorded differently by {', '.join(a['recorded_differently_by'])}"
        lines.append(f"  {a['role']:<12} {a['path']:<{width}}  md5 {_fmt(a['md5_recorded'])}  "
                     f"{a['status'].upper() if a['status'] != 'ok' else 'ok'}"
                     f"  <- {_fmt(a['stage'])}{extra}")
        if a["status"] == "modified":
            lines.append(f"  {'':<12} {'':<{width}}  on disk {a['md5_disk']}")
            lines += [f"  {'':<12} {why}" for why in a["why"]]
    lines += [f"machine     {line}" for line in p["machine"]]
    lines.append("stages      (commands from dvc.lock, long ones shortened: --json has them whole)")
    for s in p["stages"]:
        code = (f"{s['code_deps']} code deps recorded, all match" if not s["code_changed"]
                else f"{s['code_deps']} code deps recorded, changed since: "
                     f"{', '.join(s['code_changed'])}")
        lines += [f"  {s['name']}  -> {', '.join(s['outs'])}", f"    cmd: {shorten(s['cmd'])}",
                  f"    code: {code}"]
    return lines


def _render_case(c: dict[str, Any]) -> list[str]:
    v = c["verdict"]
    verdict = "no score row" if v is None else (
        ("PASSED" if v["passed"] else "FAILED") if v["scored"] else "not scored")
    lines = [
        f"case        {c['case_id']}  outcome {c['outcome']}"
        + (f" ({c['error']})" if c["error"] else ""),
        f"  gold class {_fmt(c['gold_action'])} at gold turn {_fmt(c['gold_turn'])}; "
        f"in numerator: {c['in_numerator']}; in denominator: {c['in_denominator']}",
        f"  verdict: {verdict}",
    ]
    if v is not None and v["error_type"]:
        lines.append(f"    error {v['error_type']}: {_fmt(v['error_message'])}"
                     + (f" (turn {v['failed_turn']})" if v["failed_turn"] is not None else ""))
    if v is not None and v["details"]:
        lines.append(f"    details: {truncate(_json(v['details']), 600)}")
    for i in c["interventions"]:
        lines.append(f"  probe {i['probe']} turn {i['turn']} step {i['step']}: "
                     f"{'fired' if i['fired'] else 'not fired'} ({i['reason']})")
    for t in c["turns"]:
        cls = t["class"] or {}
        mark = "  <- GOLD TURN" if t["is_gold_turn"] else ""
        lines.append(f"  turn {t['index']}  gold {_fmt(t['gold_action'])}  class "
                     f"{_fmt(cls.get('action'))}  rule {_fmt(cls.get('rule'))}  evidence "
                     f"{cls.get('evidence')!r}  ended {_fmt(t['ended'])}{mark}")
        if not t["reached"]:
            lines.append("    (not reached)")
        messages = t["messages"]
        for s in [*t["steps"], None]:
            index = None if s is None else s["index"]
            for m in messages:
                if m["before_step"] == index:
                    lines.append(_block(f"    {m['role']}: ", m["content"]))
            if s is None:
                break
            step_cls = s["class"] or {}
            tag = " DROPPED (withdrawn by the probe; not in the turn's class)" if s["dropped"] \
                else ""
            lines.append(f"    step {s['index']}{tag}: class {_fmt(step_cls.get('action'))}  "
                         f"rule {_fmt(step_cls.get('rule'))}  evidence "
                         f"{step_cls.get('evidence')!r}  parse {s['parse']}"
                         + (f" ({s['parse_error']})" if s["parse_error"] else ""))
            if s["text"]:
                lines.append(_block("      text: ", s["text"]))
            for n, call in enumerate(s["calls"]):
                result = s["results"][n] if n < len(s["results"]) else None
                lines.append(f"      call {call['name']}({_json(call['arguments'])})"
                             + ("" if result is None else f" -> {result}"))
    return lines


def render(report: dict[str, Any]) -> str:
    """The audit as text."""
    cell = report["cell"]
    context = report["config"]
    code = report["code"]
    lines = [
        f"cell        {' / '.join(cell.values())}  (gold {_fmt(report['gold_action'])})",
        *_render_metric(report["metric"]),
        "",
        *_render_provenance(report["provenance"]),
        "",
    ]
    if not code and not report["packages"]:
        lines.append(f"run         unknown: {MANIFEST} is missing (model identity, config, "
                     "package versions and code version come from it)")
    else:
        dirty = {True: "dirty", False: "clean"}.get(code.get("dirty"), "clean state unknown")
        lines += [
            f"model       {cell['model']}: identity {_json(report['model_identity'])}",
            f"config      limit={_fmt(context['limit'])} classifier="
            f"{_fmt(context['classifier'])} variants={_json(context['variants'])}",
            f"            model entry {_json(context['model'])}",
            f"            benchmark entry {_json(context['benchmark'])}",
            "packages    " + ", ".join(f"{k} {_fmt(v)}" for k, v in report["packages"].items()),
            f"code        git commit {code.get('git_commit', 'unknown')}, {dirty} (as the "
            "manifest recorded it)",
        ]
    if "published" in report:
        lines += ["", *(f"published   {text}" for text in report["published"]["agreement"]),
                  *(f"            {r['case_id'] or 'record ' + str(r['index'])} "
                    f"({r['status']}): recorded {_fmt(r['recorded_reward'])}, recomputed "
                    f"{_fmt(r['reward'])}: {_fmt(r['note'])}"
                    for r in report["published"]["listed"])]
    if "case" in report:
        lines += ["", *_render_case(report["case"])]
    lines.append("")
    if report["ok"]:
        lines.append("audit: OK (the number is reproduced and every artifact matches dvc.lock)")
    else:
        lines += ["audit: FAILED", *(f"  - {p}" for p in report["problems"])]
    return "\n".join(lines) + "\n"


def main_audit(argv: Sequence[str] | None = None) -> int:
    """`toolcalib audit MODEL VARIANT BENCHMARK CATEGORY METRIC [--gold] [--root] [--case]
    [--json]`."""
    parser = argparse.ArgumentParser(prog="toolcalib audit",
                                     description=__doc__.split("\n")[0])
    for key in KEYS:
        parser.add_argument(key)
    parser.add_argument("metric", help="a rate (gar, ter, acc, ...) or count (n, ...) column")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="project root holding results/ and dvc.lock (default: .)")
    parser.add_argument("--gold", default=None,
                        help="the cell's gold class, where its category has several (τ²)")
    parser.add_argument("--case", default=None, help="also show this case's full trajectory")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    try:
        report = audit(args.root, args.model, args.variant, args.benchmark, args.category,
                       args.metric, args.case, args.gold)
    except AuditError as error:
        print(f"toolcalib audit: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(render(report))
    if not report["ok"]:
        print(f"toolcalib audit: FAILED: {len(report['problems'])} problem(s)", file=sys.stderr)
        return 1
    return 0
