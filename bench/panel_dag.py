"""The scheduling and bookkeeping cost of a paper-sized panel on the default DAG.

    python bench/panel_dag.py [--models 12] [--workdir DIR]

Twelve models (reference policies under distinct names stand in: the DAG does not depend on
the backend), every case (`limit: null`), the default variants and benchmarks. In a copy of the
project (the workflow, config and code in a fresh git repository, as the tests make it) it
times `snakemake -n` (the plan from nothing built) and counts its jobs, writes the DAG's
`dvc.yaml` (`toolcalib dvc-sync`, timed), then times `dvc status` twice: with nothing built,
and with every output present and recorded (`dvc commit` of empty placeholder files: DVC's
per-stage bookkeeping, hashes cached in its state database as after a real build), and
`snakemake -n` once more with every output present (nothing to do). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.workflow_build import tiny_project  # noqa: E402

POLICIES = ("oracle", "always_call", "never_call", "always_ask", "always_refuse")
OVERLAY = "panel.yaml"


def panel(models: int) -> dict:
    """The overlay: `models` policy entries named like a panel, the run's variants each."""
    return {"limit": None, "judge": None, "models": [
        {"name": f"model-{i:02d}", "backend": "policy",
         "options": {"policy": POLICIES[i % len(POLICIES)]}} for i in range(1, models + 1)]}


def timed(*args: str, cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return round(seconds, 2), done.stdout + done.stderr


def job_counts(dry_run: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run: jobs per rule and the total."""
    table = dry_run.split("Job stats:")[1]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", table, re.MULTILINE))
    return {rule: int(n) for rule, n in counts.items()}


def outputs(lock_stages: dict) -> list[str]:
    return [out if isinstance(out, str) else next(iter(out)) for stage in lock_stages.values()
            for key in ("outs", "metrics", "plots") for out in stage.get(key, [])]


def measure(project: Path, models: int) -> dict:
    (project / OVERLAY).write_text(yaml.safe_dump(panel(models)))
    config = ("--configfile", OVERLAY)
    plan_s, plan = timed("snakemake", "-n", "--cores", "8", *config, cwd=project)
    sync_s, _ = timed("toolcalib", "dvc-sync", *config, cwd=project)
    timed("dvc", "init", "-q", cwd=project)
    status_empty_s, _ = timed("dvc", "status", "--json", cwd=project)
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    for out in outputs(stages):
        path = project / out
        if path.suffix:  # a file; directory() outputs (converted models) get a marker file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "placeholder").touch()
    commit_s, _ = timed("dvc", "commit", "-f", "-q", cwd=project)
    status_built_s, status = timed("dvc", "status", "--json", cwd=project)
    assert json.loads(status) == {}, status[:2000]
    timed("snakemake", "--touch", "--cores", "1", *config, "--quiet", cwd=project)
    noop_s, noop = timed("snakemake", "-n", "--cores", "8", *config, cwd=project)
    jobs = job_counts(plan)
    return {"models": models, "jobs": jobs.pop("total"), "jobs_per_rule": jobs,
            "dvc_stages": len(stages), "snakemake_dry_run_s": plan_s,
            "snakemake_dry_run_built_s": noop_s, "nothing_to_do": "Nothing to be done" in noop,
            "dvc_sync_s": sync_s, "dvc_status_unbuilt_s": status_empty_s,
            "dvc_commit_s": commit_s, "dvc_status_built_s": status_built_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--workdir", type=Path, help="kept (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        project = tiny_project(args.workdir or Path(scratch) / "panel")
        print(json.dumps(measure(project, args.models), indent=1))


if __name__ == "__main__":
    main()
