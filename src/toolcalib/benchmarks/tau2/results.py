"""Reading a τ² results file (`read_run`: its shape checked, `run.Run`) and the results files a
published run's `path` names (`run_files`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcalib.benchmarks.tau2.release import DOMAINS
from toolcalib.benchmarks.tau2.run import Run
from toolcalib.jsonio import InputError, sha256_file

SHAPE = "an object with keys 'info', 'tasks' and 'simulations' (τ²'s results format)"


def read_run(path: str | Path) -> Run:
    """A results file, its shape checked (one `InputError` line naming the file otherwise)."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not a complete JSON document ({exc.msg} at line {exc.lineno}"
                         f" column {exc.colno}); expected {SHAPE}") from None
    if isinstance(data, list):
        raise InputError(f"{path}: a JSON list of {len(data)} items, expected {SHAPE}")
    if not isinstance(data, dict):
        raise InputError(f"{path}: a JSON {type(data).__name__}, expected {SHAPE}")
    missing = [key for key in ("info", "tasks", "simulations") if key not in data]
    if missing:
        raise InputError(f"{path}: keys {', '.join(sorted(map(str, data)))} (no "
                         f"{', '.join(missing)}), expected {SHAPE}")
    info, tasks, simulations = data["info"], data["tasks"], data["simulations"]
    if not isinstance(info, dict) or not isinstance(tasks, list) \
            or not isinstance(simulations, list):
        raise InputError(f"{path}: 'info' must be an object, 'tasks' and 'simulations' lists;"
                         f" expected {SHAPE}")
    domain = (info.get("environment_info") or {}).get("domain_name")
    if domain not in DOMAINS:
        raise InputError(f"{path}: field 'info.environment_info.domain_name': {domain!r}, "
                         f"expected one of {', '.join(DOMAINS)}")
    by_id: dict[str, dict[str, Any]] = {}
    for number, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            raise InputError(f"{path}: field 'tasks[{number}].id': missing or not a string")
        by_id[task["id"]] = task
    for number, sim in enumerate(simulations):
        if not isinstance(sim, dict) or not isinstance(sim.get("messages"), list):
            raise InputError(f"{path}: field 'simulations[{number}].messages': missing or not"
                             " a list")
    return Run(path, sha256_file(path), domain, info, by_id, simulations)


def run_files(path: str | Path) -> list[Path]:
    """The results files `path` names: itself, or the `*.json` files of a folder (sorted by
    name: the order several files of one domain are read in as trials of one run)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or folder (a published run's `path`)")
    files = sorted(p for p in path.glob("*.json") if p.is_file())
    if not files:
        raise InputError(f"{path}: no *.json results file in the folder")
    return files
