"""The `evaluate` stage's start-up and record parsing, one source tree against another.

    python bench/record_parse.py [--before REV] [--after REV|.] [--results DIR] [--repeat N]
                                 [--job MODEL/VARIANT ...] [--no-bytecode] [--json FILE]

Each tree is a git revision's `src/` (`git archive`; default `--before`: where HEAD left main,
`git merge-base HEAD main`, so that only this branch's changes differ) or the working tree's
(`.`, the default `--after`). Every figure is the median of `--repeat` fresh processes
(`PYTHONPATH=<tree>/src`), the two trees taking turns:

- `start-up`: `python -c "import toolcalib.cli, toolcalib.stages.evaluate;
  toolcalib.benchmarks.get_benchmark('bfcl')"`, what a `toolcalib evaluate` process imports
  before it reads a line (wall time of the whole process, interpreter included; `python -c
  pass` is shown too);
- `parse <file>`: reading one input file as the stage reads it (the cycle collector paused, as
  the stage does), timed inside the process after its imports, one process per kind reading
  the six files in turn (what it builds once counts in the first file's time): case files and
  trajectory files (the plain views, `views.read_views(path, CaseView|TrajectoryView)`, of a
  tree that has `toolcalib.views`, else the records, `jsonio.read_records(path,
  Case|Trajectory)`) and gold files (`benchmarks.bfcl.gold.read_gold`, every turn of every
  trace asked for, `turn(i)`, so that a tree that decodes traces or turns when asked does all
  the work);
- `evaluate <job>`: the workflow's whole `toolcalib evaluate` job of a (model, variant) over
  the six BFCL categories (outputs into a temporary folder), wall time: start-up, parsing,
  classification, scoring and writing together; the outputs of the two trees are compared
  byte for byte (a difference fails the run).

The inputs are the pipeline's own (`results/cases/bfcl`, `results/gold/bfcl`,
`results/trajectories/<job>/bfcl`, `results/raw/bfcl/*.whl`: run `dvc pull` or the workflow
first). Bytecode is cached in a temporary folder (`PYTHONPYCACHEPREFIX`; a first untimed run
fills it), as an installed package has it; `--no-bytecode` compiles every module in every
process, as this sandbox's `PYTHONDONTWRITEBYTECODE=1` does. Ratios are after / before
(< 1: after is faster).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATEGORIES = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
              "multi_turn_miss_param", "irrelevance", "live_irrelevance")
IMPORTS = ("import toolcalib.cli, toolcalib.stages.evaluate, toolcalib.benchmarks;"
           " toolcalib.benchmarks.get_benchmark('bfcl')")

PROBE = r"""
import gc, json, sys, time
kind, paths = sys.argv[1], sys.argv[2:]
try:
    from toolcalib.views import CaseView as Case, TrajectoryView as Trajectory, read_views as read
except ImportError:
    from toolcalib.jsonio import read_records as read
    from toolcalib.records import Case, Trajectory
try:
    from toolcalib.benchmarks.bfcl.gold import read_gold
except ImportError:  # trees before BFCL became one package
    from toolcalib.score.gold import read_gold
gc.disable()
done = []
for path in paths:
    begin = time.perf_counter()
    if kind == "gold":
        golds = read_gold(path)
        for gold in golds.values():
            index = 0
            while True:
                try:
                    gold.turn(index)
                except ValueError:
                    break
                index += 1
        count = len(golds)
    else:
        count = len(read(path, Case if kind == "cases" else Trajectory))
    done.append({"seconds": time.perf_counter() - begin, "records": count})
print(json.dumps(done))
"""


def tree_of(revision: str, work: Path) -> Path:
    """The `src/` of a revision (or of the working tree, `.`) laid out in the folder `work`."""
    if revision == ".":
        return ROOT
    folder = work
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    folder.mkdir(parents=True)
    archive_path = work / "src.tar"  # beside the tree's src/
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(folder, filter="data")
    return folder


def environment(tree: Path, pycache: Path | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), TZ="UTC")
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def wall(command: list[str], env: dict[str, str], cwd: Path) -> float:
    begin = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - begin


def probe(kind: str, paths: list[Path], env: dict[str, str]) -> list[dict[str, float]]:
    """Each file of one kind read in turn by one process, as the stage reads them (the first
    file's time holds what the process builds once, a decoder for instance)."""
    done = subprocess.run([sys.executable, "-c", PROBE, kind, *map(str, paths)], env=env,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def evaluate_argv(results: Path, job: str, out: Path) -> list[str]:
    """The workflow's `toolcalib evaluate` arguments for one job, outputs under `out`."""
    (wheel,) = sorted((results / "raw" / "bfcl").glob("*.whl"))

    def files(kind: str, folder: Path) -> list[str]:
        return [kind, *(str(folder / f"{category}.jsonl") for category in CATEGORIES)]

    return ["evaluate", "--profile", "default", "--benchmark", "bfcl", "--source", str(wheel),
            *files("--cases", results / "cases" / "bfcl"),
            *files("--gold", results / "gold" / "bfcl"),
            *files("--trajectories", results / "trajectories" / job / "bfcl"),
            *files("--actions", out / "actions"), *files("--scores", out / "scores"),
            "--per-case", str(out / "per_case.jsonl"), "--triples", str(out / "triples.csv")]


def same_outputs(a: Path, b: Path) -> list[str]:
    """The output files that differ between two runs' folders."""
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    return [name for name in names if not filecmp.cmp(a / name, b / name, shallow=False)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None,
                        help="git revision (default: git merge-base HEAD main)")
    parser.add_argument("--after", default=".", help="git revision, or . (the working tree)")
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--job", action="append", default=None,
                        help="MODEL/VARIANT (default: policy-always_call/baseline and"
                             " qwen2.5-coder-0.5b/baseline)")
    parser.add_argument("--no-bytecode", action="store_true")
    parser.add_argument("--json", default=None, help="write the figures here too")
    args = parser.parse_args()
    if args.before is None:
        args.before = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout.strip()[:12]
    results = Path(args.results).resolve()
    jobs = args.job or ["policy-always_call/baseline", "qwen2.5-coder-0.5b/baseline"]
    inputs = [("cases", results / "cases" / "bfcl" / f"{c}.jsonl") for c in CATEGORIES]
    inputs += [("trajectories", results / "trajectories" / job / "bfcl" / f"{c}.jsonl")
               for job in jobs[:1] for c in CATEGORIES]
    inputs += [("gold", results / "gold" / "bfcl" / f"{c}.jsonl") for c in CATEGORIES]
    missing = [str(path) for _, path in inputs if not path.is_file()]
    if missing:
        raise SystemExit(f"missing inputs (dvc pull, or run the workflow): {missing[:3]}")

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        trees = {name: tree_of(revision, work / "trees" / name)
                 for name, revision in (("before", args.before), ("after", args.after))}
        envs = {name: environment(tree, None if args.no_bytecode else work / f"pyc-{name}")
                for name, tree in trees.items()}
        times: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        counts: dict[str, dict[str, int]] = {name: {} for name in trees}

        def record(name: str, label: str, seconds: float) -> None:
            times[name].setdefault(label, []).append(seconds)

        for env in envs.values():  # untimed: fills the bytecode cache
            wall([sys.executable, "-c", IMPORTS], env, work)
        for round_ in range(args.repeat):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for name in order:
                env = envs[name]
                record(name, "python -c pass", wall([sys.executable, "-c", "pass"], env, work))
                record(name, "start-up (evaluate's imports)",
                       wall([sys.executable, "-c", IMPORTS], env, work))
                for kind in ("cases", "trajectories", "gold"):
                    paths = [path for of, path in inputs if of == kind]
                    for path, done in zip(paths, probe(kind, paths, env), strict=True):
                        record(name, f"parse {kind}/{path.name}", done["seconds"])
                        counts[name][f"{kind}/{path.name}"] = done["records"]
                for job in jobs:
                    out = work / "out" / name / job
                    argv = evaluate_argv(results, job, out)
                    command = [sys.executable, "-c",
                               "import sys; from toolcalib.cli import main; sys.exit(main())",
                               *argv]
                    record(name, f"evaluate {job}", wall(command, env, ROOT))
        if counts["before"] != counts["after"]:
            raise SystemExit(f"the trees read different record counts: {counts}")
        differing = [f"{job}: {name}" for job in jobs for name in same_outputs(
            work / "out" / "before" / job, work / "out" / "after" / job)]
        if differing:
            raise SystemExit(f"outputs differ between the trees: {differing}")

    medians = {name: {label: statistics.median(values) for label, values in by.items()}
               for name, by in times.items()}
    labels = list(medians["before"])
    for kind in ("cases", "trajectories", "gold"):
        labels.append(f"parse {kind} (6 files)")
        for name in trees:
            medians[name][labels[-1]] = sum(
                seconds for label, seconds in medians[name].items()
                if label.startswith(f"parse {kind}/"))
    width = max(map(len, labels)) + 2
    print(f"before = {args.before}, after = {args.after}; median of {args.repeat} processes, "
          f"{'no bytecode cache' if args.no_bytecode else 'bytecode cached'}; seconds")
    print(f"{'':<{width}}{'before':>9}{'after':>9}{'after/before':>14}")
    for label in labels:
        before, after = medians["before"][label], medians["after"][label]
        print(f"{label:<{width}}{before:9.3f}{after:9.3f}{after / before:14.2f}")
    print(f"every evaluate job's outputs equal between the trees ({len(jobs)} jobs)")
    if args.json:
        Path(args.json).write_text(json.dumps({"before": args.before, "after": args.after,
                                               "repeat": args.repeat, "medians": medians},
                                              indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
