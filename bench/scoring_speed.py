"""Wall and CPU time of our classify + score + aggregate against BFCL's reference checker.

Run from the repository root (about a minute on 2 busy cores with the defaults):

    python bench/scoring_speed.py [--model always_call|oracle] [--repeat 3] [--workdir DIR]

1. Setup (untimed): in a temporary folder laid out like the repository, `toolcalib normalize`,
   `gold` and `generate` produce one reference policy's trajectories for all six BFCL
   categories (1,924 cases); the trajectories are also written as BFCL model-result files
   (per turn, per step: the step's text and its calls rendered by `render_call`).
2. OURS (timed, whole processes): the workflow's exact shell commands (through bash, as
   Snakemake runs them): `evaluate`, one process that classifies and scores the six categories
   and writes the model's per-category action and score tables, its per-case table and its
   triples (everything a user needs for this model's triples); then the global `aggregate`
   (all models' tables: confusion, shift, metrics.json, triples.md), as the workflow runs them;
   each process timed. `toolcalib` is whatever PATH gives
   this interpreter (a venv's or pyenv's console script; a pyenv-launched interpreter puts
   its own bin folder first, so no shim is involved).
3. BASELINE (timed, whole processes, as the paper runs BFCL and then its `gar.py`):
   `bench/bfcl_reference_scorer.py` - BFCL's eval runner for the six categories (its own
   `multi_turn_checker` imported from the pinned wheel, its irrelevance rule, its score files),
   then `bench/paper_gar.py` - GAR with the published cue classifier over the same result
   files, Acc from the score files' headers.
4. Checks that every case's verdict (pass/fail and BFCL's error type, read from BFCL's score
   files) and every case's and category's GAR are identical, then prints wall and CPU (user +
   system, all child processes) times of each process and of each pipeline, and the ratios
   baseline / ours (>= 1: our pipeline is not slower). Also prints what one bare process of
   each stage costs before it reads anything (interpreter + imports).

Exit status 1 if any verdict or GAR differs; the timing itself never fails the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
from bfcl_reference_scorer import SCORED

from toolcalib.execute.calls import render_call
from toolcalib.metrics.inputs import read_table
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.records import ToolCall

ROOT = Path(__file__).resolve().parents[1]
WHEEL = "bfcl_eval-2026.3.23-py3-none-any.whl"
RELEASE = f"results/raw/bfcl/{WHEEL}"
CHECKER = ROOT / "bench" / "bfcl_reference_scorer.py"
PAPER_GAR = ROOT / "bench" / "paper_gar.py"
CATEGORIES = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
              "multi_turn_miss_param", "irrelevance", "live_irrelevance")
VARIANT = "baseline"
PROFILE = "paper"
q = shlex.quote


def run_shell(command: str, cwd: Path) -> None:
    """One workflow job: Snakemake runs each rule's shell command through bash."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {command}")


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """(wall s, CPU s of every child process it waited for)."""
    cpu, start = cpu_children(), time.perf_counter()
    action()
    return time.perf_counter() - start, cpu_children() - cpu


def run_jobs(commands: list[str], cwd: Path, cores: int) -> None:
    if cores == 1:
        for command in commands:
            run_shell(command, cwd)
        return
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(lambda c: run_shell(c, cwd), commands))


# --- setup (untimed) ---------------------------------------------------------------------

def setup(work: Path, model: str, policy: str) -> dict[str, float]:
    """normalize, gold, generate as the workflow does; returns the gold stage's wall time."""
    (work / "results/raw/bfcl").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / RELEASE, work / RELEASE)
    spec = json.dumps({"backend": "policy", "name": model, "options": {"policy": policy}},
                      sort_keys=True, separators=(",", ":"))
    normalize, gold, generate = [], [], []
    for c in CATEGORIES:
        cases = f"results/cases/bfcl/{c}.jsonl"
        normalize.append(f"toolcalib normalize --benchmark bfcl --category {c}"
                         f" --source {q(RELEASE)} --out {q(cases)}"
                         f" 2> {q(log(work, 'normalize', c))}")
        gold.append(f"toolcalib gold --benchmark bfcl --cases {q(cases)} --source {q(RELEASE)}"
                    f" --out results/gold/bfcl/{c}.jsonl 2> {q(log(work, 'gold', c))}")
        generate.append(
            f"toolcalib generate --model-spec {q(spec)} --variant {VARIANT} --benchmark bfcl"
            f" --cases {q(cases)} --source {q(RELEASE)} --limit all --store .toolcalib/store"
            f" --out {q(trajectories(model, c))} 2> {q(log(work, 'generate', c))}")
    run_jobs(normalize, work, 2)
    gold_wall, _ = timed(lambda: run_jobs(gold, work, 1))
    run_jobs(generate, work, 2)
    return {"gold_stage_wall_s": gold_wall}


def log(work: Path, stage: str, category: str) -> str:
    path = work / "results/logs" / stage / f"{category}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path.relative_to(work))


def trajectories(model: str, category: str) -> str:
    return f"results/trajectories/{model}/{VARIANT}/bfcl/{category}.jsonl"


def write_bfcl_results(work: Path, model: str) -> Path:
    """Each trajectory as a BFCL model-result line: per turn, per kept step, text and calls."""
    out = work / "bfcl_results"
    out.mkdir(exist_ok=True)
    for c in CATEGORIES:
        lines = []
        for text in (work / trajectories(model, c)).read_text("utf-8").splitlines():
            trajectory = json.loads(text)
            result = [[{"text": step["emission"]["text"],
                        "structured": step["emission"]["structured"],
                        "calls": [] if step["emission"]["parse"] == "malformed" else
                        [render_call(ToolCall(**call)) for call in step["emission"]["tool_calls"]]}
                       for step in turn["steps"] if not step.get("dropped")]
                      for turn in trajectory["turns"]]
            lines.append(json.dumps({"id": trajectory["case_id"], "result": result,
                                     "outcome": trajectory["outcome"]}))
        (out / f"{c}.json").write_text("\n".join(lines) + "\n", "utf-8")
    return out


# --- the two timed contenders -------------------------------------------------------------

def our_jobs(work: Path, model: str, profile: str = PROFILE) -> tuple[str, str]:
    """The workflow's `evaluate_bfcl` job for the model, then the `aggregate` job."""
    files = {name: " ".join(q(path(c)) for c in CATEGORIES) for name, path in {
        "cases": lambda c: f"results/cases/bfcl/{c}.jsonl",
        "gold": lambda c: f"results/gold/bfcl/{c}.jsonl",
        "trajectories": lambda c: trajectories(model, c),
        "actions": lambda c: output("actions", model, c),
        "scores": lambda c: output("scores", model, c)}.items()}
    evaluate = (f"toolcalib evaluate --profile {profile} --benchmark bfcl --source {q(RELEASE)}"
                + "".join(f" --{name} {paths}" for name, paths in files.items())
                + f" --per-case {q(run_output(model, 'per_case.jsonl'))}"
                f" --triples {q(run_output(model, 'triples.csv'))}"
                f" 2> {q(log(work, 'evaluate', model))}")
    aggregate = (f"toolcalib aggregate --actions {files['actions']}"
                 f" --runs {q(run_output(model, 'per_case.jsonl'))}"
                 f" --out-dir results/metrics 2> results/logs/aggregate.log")
    return evaluate, aggregate


def output(stage: str, model: str, category: str) -> str:
    return f"results/{stage}/{model}/{VARIANT}/bfcl/{category}.jsonl"


def run_output(model: str, name: str) -> str:
    return f"results/runs/{model}/{VARIANT}/bfcl/{name}"


def baseline_jobs(model: str, results: Path) -> tuple[list[str], list[str], list[str]]:
    """BFCL's evaluation (score files), then the paper-style GAR over results and scores; and
    the evaluation writing only the score files' headers (a lower bound, not BFCL)."""
    check = [sys.executable, str(CHECKER), "--wheel", RELEASE, "--results", str(results),
             "--model", model, "--scores", "bfcl_scores"]
    gar = [sys.executable, str(PAPER_GAR), "--results", str(results), "--scores", "bfcl_scores",
           "--model", model, "--out", "paper_gar.json"]
    bare = [*check[:-1], "bfcl_scores_bare", "--no-score-files"]
    return check, gar, bare


def run_process(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, stderr=subprocess.DEVNULL)
    if done.returncode:
        raise SystemExit(f"baseline failed ({done.returncode}): {shlex.join(command)}")


# --- checks -----------------------------------------------------------------------------

def compare(work: Path, model: str) -> list[str]:
    """Differences between our verdicts/GAR and the baseline's (empty: identical)."""
    theirs = {"verdicts": bfcl_verdicts(work, model),
              **json.loads((work / "paper_gar.json").read_text())}
    problems = []
    ours_scores = pl.concat([pl.read_ndjson(work / output("scores", model, c),
                                            infer_schema_length=None)
                             .select("case_id", "scored", "passed", "error_type")
                             for c in CATEGORIES]).filter("scored")
    seen = set()
    for row in ours_scores.iter_rows(named=True):
        seen.add(row["case_id"])
        ref = theirs["verdicts"].get(row["case_id"])
        if ref is None:
            problems.append(f"{row['case_id']}: no baseline verdict")
        elif (row["passed"], row["error_type"]) != (ref["valid"], ref["error_type"]):
            problems.append(f"{row['case_id']}: ours {row['passed']}/{row['error_type']},"
                            f" BFCL {ref['valid']}/{ref['error_type']}")
    problems += [f"{case}: only the baseline scored it" for case in set(theirs["verdicts"]) - seen]
    run_table = read_table(work / run_output(model, "per_case.jsonl"), CASE_SCHEMA)
    per_case = run_table.filter("scored")
    for row in per_case.iter_rows(named=True):
        ref = theirs["cases"].get(row["case_id"])
        if ref is not None and ref["gold_hit"] != row["gold_emitted_any_step"]:
            problems.append(f"{row['case_id']}: gold emitted ours {row['gold_emitted_any_step']}"
                            f" ({row['emission_classes']}), paper-style {ref['gold_hit']}"
                            f" ({'|'.join(ref['emitted'])})")
    triples = pl.read_csv(work / run_output(model, "triples.csv"))
    if not pl.read_parquet(work / "results/metrics/per_case.parquet").equals(run_table):
        problems.append("aggregate's per_case.parquet differs from the run's own table")
    if (work / "results/metrics/triples.csv").read_bytes() != \
            (work / run_output(model, "triples.csv")).read_bytes():
        problems.append("aggregate's triples.csv differs from the run's own")
    for row in triples.iter_rows(named=True):
        ref = theirs["gar"][row["category"]]
        if (row["gar_emission_k"], row["n"]) != (ref["k"], ref["n"]):
            problems.append(f"{row['category']}: GAR ours {row['gar_emission_k']}/{row['n']},"
                            f" paper-style {ref['k']}/{ref['n']}")
    return problems


def bfcl_verdicts(work: Path, model: str) -> dict[str, dict]:
    """Per scored case BFCL's verdict, from its score files: a case is listed iff it failed."""
    verdicts = {}
    for c in CATEGORIES:
        for line in (work / "bfcl_results" / f"{c}.json").read_text("utf-8").splitlines():
            entry = json.loads(line)
            if entry["outcome"] in SCORED:
                verdicts[entry["id"]] = {"valid": True, "error_type": None}
    for score in sorted((work / "bfcl_scores" / model).glob("*/*_score.json")):
        header, *failures = [json.loads(line) for line in score.read_text("utf-8").splitlines()]
        if header["correct_count"] + len(failures) != header["total_count"]:
            raise SystemExit(f"{score}: header does not match its failures")
        for failure in failures:
            error = failure["error"] if isinstance(failure["error"], dict) else failure
            verdicts[failure["id"]] = {"valid": False, "error_type": error["error_type"]}
    return verdicts


def moved_roots(work: Path) -> list[str]:
    """Cases whose GorillaFileSystem root (BFCL: the first key of `root`) changed in our case
    files: normalize writes canonical JSON with sorted keys, so dict order is not kept."""
    wheel = zipfile.ZipFile(work / RELEASE)
    moved = []
    for c in CATEGORIES[:4]:
        theirs = {}
        for line in wheel.read(f"bfcl_eval/data/BFCL_v4_{c}.json").decode().splitlines():
            if line.strip():
                entry = json.loads(line)
                theirs[entry["id"]] = entry["initial_config"]
        for line in (work / f"results/cases/bfcl/{c}.jsonl").read_text("utf-8").splitlines():
            case = json.loads(line)
            ours_root = case["environment"]["initial_config"].get("GorillaFileSystem", {})
            their_root = theirs[case["id"]].get("GorillaFileSystem", {})
            if list(ours_root.get("root", {}))[:1] != list(their_root.get("root", {}))[:1]:
                moved.append(case["id"])
    return moved


def gar_table(work: Path, model: str) -> str:
    theirs = json.loads((work / "paper_gar.json").read_text())["gar"]
    triples = pl.read_csv(work / run_output(model, "triples.csv"))
    lines = []
    for row in triples.sort("category").iter_rows(named=True):
        ref = theirs[row["category"]]
        lines.append(f"  {row['category']:<24} n={row['n']:<4} GAR ours {row['gar_emission']:.3f}"
                     f" (turn-union {row['gar']:.3f}), paper-style {ref['gar']:.3f};"
                     f" Acc {row['acc']:.3f}")
    return "\n".join(lines)


# --- start-up floor -----------------------------------------------------------------------

def startup_floor(work: Path, repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of a process that only imports what each stage imports, and exits."""
    probes = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "toolcalib evaluate --help": ["toolcalib", "evaluate", "--help"],
        "evaluate imports": [sys.executable, "-c", "import toolcalib.cli,"
                             " toolcalib.stages.evaluate, toolcalib.benchmarks.bfcl.plugin"],
        "aggregate imports": [sys.executable, "-c",
                              "import toolcalib.cli, toolcalib.stages.aggregate"],
        "BFCL checker imports": [sys.executable, "-c", "import sys, json, zipfile;"
                                 f" sys.path.append({str(work / RELEASE)!r}); import"
                                 " bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"],
        "paper GAR imports": [sys.executable, "-c", "import sys; sys.path.insert(0,"
                              f" {str(ROOT / 'bench')!r}); import json, re, yaml,"
                              " bfcl_reference_scorer"],
    }
    floor = {}
    for name, argv in probes.items():
        runs = [timed(lambda a=argv: subprocess.run(a, check=True, stdout=subprocess.DEVNULL))
                for _ in range(repeat)]
        floor[name] = (statistics.median(r[0] for r in runs),
                       statistics.median(r[1] for r in runs))
    return floor


CONTENDERS = {
    "baseline_check": "BASELINE  BFCL eval runner (score files)",
    "baseline_gar": "BASELINE  paper-style GAR",
    "baseline": "BASELINE  both, 2 processes",
    "ours_evaluate": "OURS      evaluate",
    "ours_aggregate": "OURS      aggregate (global)",
    "ours": "OURS      both, 2 processes",
    "baseline_check_bare": "LOWER BOUND  BFCL eval runner, headers only",
    "baseline_bare": "LOWER BOUND  that + paper-style GAR",
}
TOTALS = {"baseline": ("baseline_check", "baseline_gar"),
          "ours": ("ours_evaluate", "ours_aggregate"),
          "baseline_bare": ("baseline_check_bare", "baseline_gar")}
"""Pipeline figure -> the processes it sums (the lower bound reuses the real GAR process)."""
RATIOS = {"evaluate": ("ours_evaluate", "baseline_check"),
          "both": ("ours", "baseline"),
          "evaluate vs lower bound": ("ours_evaluate", "baseline_check_bare"),
          "both vs lower bound": ("ours", "baseline_bare")}
"""Ratio name -> (our figure, the baseline figure it is compared with)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="always_call", choices=("always_call", "oracle"),
                        help="the reference policy whose trajectories are scored")
    parser.add_argument("--profile", default=PROFILE,
                        help="classifier profile our classify runs (config `classifier`); the"
                        " GAR check compares with the published rules, i.e. `paper`")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each contender")
    parser.add_argument("--workdir", default=None, help="keep the run here (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    os.environ["TZ"] = "UTC"
    model = f"policy-{args.model}"
    work = Path(args.workdir or tempfile.mkdtemp(prefix="scoring_speed_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0]]
    try:
        print(f"setup in {work}: normalize, gold, generate ({model}), BFCL result files",
              flush=True)
        start = time.perf_counter()
        info = setup(work, model, args.model)
        results = write_bfcl_results(work, model)
        n = sum(len((results / f"{c}.json").read_text().splitlines()) for c in CATEGORIES)
        print(f"setup done in {time.perf_counter() - start:.1f} s: {n} cases"
              f" (gold stage {info['gold_stage_wall_s']:.1f} s, once per benchmark)", flush=True)

        check, gar, bare = baseline_jobs(model, results)
        evaluate, aggregate = our_jobs(work, model, args.profile)
        pipelines = {"baseline": {"baseline_check": lambda: run_process(check, work),
                                  "baseline_gar": lambda: run_process(gar, work)},
                     "ours": {"ours_evaluate": lambda: run_shell(evaluate, work),
                              "ours_aggregate": lambda: run_shell(aggregate, work)},
                     "baseline_bare": {"baseline_check_bare": lambda: run_process(bare, work)}}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in CONTENDERS}
        for r in range(args.repeat):
            names = list(pipelines)
            for pipeline in names[r % len(names):] + names[:r % len(names)]:  # rotate the order
                for name, action in pipelines[pipeline].items():
                    runs[name].append(timed(action))
            for total, parts in TOTALS.items():
                runs[total].append(tuple(sum(runs[p][-1][i] for p in parts) for i in (0, 1)))
            print(f"run {r + 1}/{args.repeat}: " + ", ".join(
                f"{name} {runs[name][-1][0]:.2f} s" for name in TOTALS), flush=True)
        load.append(os.getloadavg()[0])

        problems = compare(work, model)
        moved = moved_roots(work)
        gar = gar_table(work, model)
        floor = startup_floor(work, 3)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    def med(name: str, i: int) -> float:
        return statistics.median(run[i] for run in runs[name])

    figures = {"model": model, "profile": args.profile, "cases": n, "repeat": args.repeat,
               "cpus": os.cpu_count(), "load_average_1min": load, **info, "identical": not problems,
               "startup_floor_wall_cpu_s": floor}
    print(f"\n{model}, profile {args.profile}, {n} cases, median of {args.repeat} runs;"
          f" {os.cpu_count()} CPUs,"
          f" 1-min load average {load[0]:.1f} before, {load[1]:.1f} after")
    print(f"{'':<48}{'wall s':>8}{'CPU s':>8}")
    for name, label in CONTENDERS.items():
        wall, cpu = med(name, 0), med(name, 1)
        figures[f"{name}_wall_s"], figures[f"{name}_cpu_s"] = wall, cpu
        print(f"{label:<48}{wall:8.2f}{cpu:8.2f}")
    print(f"{'ratio baseline / ours (>= 1: not slower)':<48}{'wall':>8}{'CPU':>8}")
    for name, (mine, theirs) in RATIOS.items():
        wall, cpu = (med(theirs, i) / med(mine, i) for i in (0, 1))
        figures[f"ratio_{name.replace(' ', '_')}_wall"] = wall
        figures[f"ratio_{name.replace(' ', '_')}_cpu"] = cpu
        print(f"  {name:<46}{wall:8.3f}{cpu:8.3f}")
    print("one process that starts and exits (median of 3):")
    for name, (wall, cpu) in floor.items():
        print(f"  {name:<46}{wall:8.2f}{cpu:8.2f}")
    if problems:
        print(f"\nDIFFERENCES ({len(problems)}):\n  " + "\n  ".join(problems[:20]))
        if moved:
            print(f"  cases whose file-system root folder differs from BFCL's after normalize"
                  f" (initial_config key order not kept; BFCL's GorillaFileSystem takes the"
                  f" first key of `root`): {', '.join(moved)}")
    else:
        print(f"\nverdicts identical on all {n} cases; GAR identical per category.")
    print("GAR per category (ours: emission union as published, and turn union):")
    print(gar)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
