"""A published BFCL run through toolcalib's stages vs BFCL's own `bfcl evaluate`, same files.

Run from the repository root (the pinned wheel: the pipeline's download, else fetched by name;
BFCL's side needs a second virtual environment, made on first use):

    python bench/bfcl_import.py [--results DIR] [--model openai_gpt-oss-120b] [--repeat 3] \
        [--cores 1] [--bfcl-venv DIR] [--workdir DIR] [--json FILE]

One published model's five categories (`multi_turn_base`, `multi_turn_miss_func`,
`multi_turn_miss_param`, `irrelevance`, `live_irrelevance`; 1,724 cases for gpt-oss-120b),
read from `--results`: BFCL's result folder holding `<model>/<group>/BFCL_v4_<category>
_result.json` (or the run folder holding `result/`; `BFCL_v3_` names and `.xz` / `.gz`
copies read too). Default: the shared copy `../shared/bfcl-runs/bfcl-vllm-results/
2025-11-12-main/result` (relative to the repository root).

1. Setup (untimed), in a work folder laid out like the repository: the pinned release copied
   to `results/raw/bfcl/`, the release's cases and gold (`toolcalib normalize` and `gold` per
   category: once per benchmark, not per model); BFCL's project root (`BFCL_PROJECT_ROOT`)
   with a copy of the result files (decompressed) under `result/<model>/<group>/`; BFCL's
   virtual environment (`--bfcl-venv`, default `<tmp>/toolcalib-bench-bfcl-eval-<version>`):
   `pip install bfcl-eval==<pinned version> soundfile` by name (qwen-agent, one of BFCL's
   dependencies, imports `soundfile` without declaring it), never into the project's own.
2. TOOLCALIB (timed, whole processes, the workflow rules' exact shell commands through bash):
   `import-run` per category (rule `import_run`, a `replay` model `{"path": --results,
   "model": --model, "format": "fc"}`), `evaluate` (rule
   `evaluate_bfcl`: classify and score the five categories, the run's per-case table and
   triples) and `aggregate` (rule `aggregate`: this one model's metrics tables). `--cores N`
   runs the per-category jobs on N processes, as `snakemake --cores N` would.
3. BFCL (timed, one process): `bfcl evaluate --model <registry name> --test-category <the
   five>` in BFCL's environment, with a fresh score folder each time. The pinned release does
   not list the gpt-oss models (the run was made with a BFCL checkout that registered them as
   "openai/gpt-oss-120b (FC) (vLLM)"), so the process registers `--model`'s registry name
   (`_` read as `/`, BFCL's own convention) in `MODEL_CONFIG_MAPPING` with BFCL's OpenAI
   chat-completions handler in FC mode (whose `decode_execute` is `convert_to_function_call`),
   then calls BFCL's CLI entry point with exactly those arguments. The handler builds an
   OpenAI client it never uses: `OPENAI_API_KEY` is set to a placeholder in that process only.
4. Checks (not timings): per category BFCL's fresh header beside the recorded one (the score
   folder beside `--results`, if any), and per case toolcalib's recomputed verdict against
   BFCL's (a case listed in BFCL's score file failed) on every case toolcalib scored. Exit
   status 1 if a verdict differs; timings never fail the run.

Each side runs once as a warm-up, then `--repeat` times (order alternating); the figures are
medians: wall seconds and CPU seconds (user + system of the process and its children, from
`wait4`). Both sides' child processes keep their compiled bytecode under the work folder
(`PYTHONPYCACHEPREFIX`, `PYTHONDONTWRITEBYTECODE` unset) so that the warm-up leaves them as a
normal installation would be: compiled once. Prints the CPU model and both Python versions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bfcl_reference_scorer import GROUP  # noqa: E402

from toolcalib.fetch import fetch_package  # noqa: E402
from toolcalib.jsonio import sha256_file  # noqa: E402

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "irrelevance", "live_irrelevance")
DEFAULT_RESULTS = ROOT.parent / "shared/bfcl-runs/bfcl-vllm-results/2025-11-12-main/result"
PIN = yaml.safe_load((ROOT / "config/config.yaml").read_text("utf-8"))["benchmarks"]["bfcl"]
RELEASE = f"results/raw/bfcl/{PIN['file']}"
NAME = "bench-bfcl-published"
"""The `replay` model's name in toolcalib's outputs."""
PROFILE = yaml.safe_load((ROOT / "config/config.yaml").read_text("utf-8"))["classifier"]
RESULT_FILE = re.compile(r"BFCL_v[34]_(?P<category>\w+?)_result\.json(?P<suffix>\.xz|\.gz)?$")
SCORE_FILE = re.compile(r"BFCL_v[34]_(?P<category>\w+?)_score\.json(?:\.xz|\.gz)?$")
q = shlex.quote

BFCL_LAUNCHER = """\
import sys
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING, ModelConfig
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
name = sys.argv[sys.argv.index("--model") + 1]
MODEL_CONFIG_MAPPING.setdefault(name, ModelConfig(
    model_name=name, display_name=name + " (FC) (vLLM)", url="", org="", license="",
    model_handler=OpenAICompletionsHandler, is_fc_model=True))
sys.argv[0] = "bfcl"
from bfcl_eval.__main__ import cli
cli()
"""
"""`bfcl evaluate`'s console script, plus the one registry entry the pinned release lacks."""


# --- processes ------------------------------------------------------------------------------

def run_process(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
                stdout: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the process and every descendant it waited for)."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115
    try:
        start = time.perf_counter()
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
                                 if stdout else None)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    finally:
        if stdout:
            out.close()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"failed ({child.returncode}): {shlex.join(argv)}"
                         + (f" (output: {stdout})" if stdout else ""))
    return wall, usage.ru_utime + usage.ru_stime


def run_shell(command: str, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """One workflow job: Snakemake runs each rule's shell command through bash."""
    return run_process(["bash", "-c", command], cwd, env)


def run_jobs(commands: list[str], cwd: Path, env: dict[str, str], cores: int
             ) -> tuple[float, float, list[tuple[float, float]]]:
    """(wall s of the group, CPU s summed, each job's (wall, CPU)) on `cores` processes."""
    start = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        done = list(pool.map(lambda c: run_shell(c, cwd, env), commands))
    return time.perf_counter() - start, sum(cpu for _, cpu in done), done


def child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["TZ"] = "UTC"
    return env


def help_flags(argv: list[str]) -> str:
    """A command's --help text (to pass options only where this tree's CLI has them)."""
    return subprocess.run([*argv, "--help"], capture_output=True, text=True).stdout


# --- setup (untimed) ---------------------------------------------------------------------

def release_wheel(work: Path) -> None:
    """The pinned release at `results/raw/bfcl/` of the work folder (as the download rule)."""
    target = work / RELEASE
    target.parent.mkdir(parents=True, exist_ok=True)
    if (ROOT / RELEASE).is_file() and sha256_file(ROOT / RELEASE) == PIN["sha256"]:
        shutil.copyfile(ROOT / RELEASE, target)
        return
    fetch_package(f"{PIN['package']}=={PIN['version']}", PIN["sha256"], target)


def result_files(results: Path, model: str) -> tuple[Path, dict[str, Path]]:
    """The folder holding `<model>/`, and category -> its result file under it."""
    if (results / "result" / model).is_dir():
        results = results / "result"
    found: dict[str, Path] = {}
    for path in sorted((results / model).rglob("*")):
        match = RESULT_FILE.match(path.name)
        if match and match["category"] in CATEGORIES:
            if match["category"] in found:
                raise SystemExit(f"two result files for {match['category']}: "
                                 f"{found[match['category']]}, {path}")
            found[match["category"]] = path
    missing = [c for c in CATEGORIES if c not in found]
    if missing:
        raise SystemExit(f"{results / model}: no result file for {', '.join(missing)}")
    return results, found


def read_text(path: Path) -> str:
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix)
    return opener(path, "rt", encoding="utf-8").read() if opener else path.read_text("utf-8")


def bfcl_project(work: Path, files: dict[str, Path], model: str) -> Path:
    """BFCL's project root with the result files as BFCL reads them (plain JSON, v4 names)."""
    root = work / "bfcl_project"
    for category, path in files.items():
        target = root / "result" / model / GROUP[category] / f"BFCL_v4_{category}_result.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(read_text(path), "utf-8")
    return root


BFCL_EXTRA = ("soundfile",)
"""Installed beside bfcl-eval: qwen-agent (a dependency of bfcl-eval, imported by its model
registry) imports `soundfile` without declaring it (qwen-agent 0.0.34, 2026-12)."""


def bfcl_venv(venv: Path) -> Path:
    """BFCL's environment: `pip install bfcl-eval==<pin>` by name (its dependencies with it),
    never the project's own environment; reused while it imports BFCL's CLI."""
    python = venv / "bin" / "python"
    requirement = f"{PIN['package']}=={PIN['version']}"
    probe = [str(python), "-c", "import importlib.metadata as m, bfcl_eval.__main__;"
             " print(m.version('bfcl-eval'))"]
    if python.is_file() and subprocess.run(probe, capture_output=True, text=True
                                           ).stdout.strip() == PIN["version"]:
        return python
    print(f"installing {requirement} into {venv} (once; several minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log = venv / "install.log"
    with open(log, "wb") as out:
        done = subprocess.run([str(python), "-m", "pip", "install", requirement, *BFCL_EXTRA],
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        raise SystemExit(f"pip install {requirement} failed (exit {done.returncode}): {log}")
    check = subprocess.run(probe, capture_output=True, text=True)
    if check.returncode:
        raise SystemExit(f"{venv}: BFCL's CLI does not import:\n{check.stderr[-2000:]}")
    return python


def setup(work: Path, env: dict[str, str], cores: int) -> None:
    """The release's cases and gold per category, as the workflow makes them."""
    release_wheel(work)
    normalize, gold = [], []
    for c in CATEGORIES:
        normalize.append(f"toolcalib normalize --benchmark bfcl --category {c}"
                         f" --source {q(RELEASE)} --out results/cases/bfcl/{c}.jsonl"
                         f" 2> {q(log(work, 'normalize', c))}")
        gold.append(f"toolcalib gold --benchmark bfcl --cases results/cases/bfcl/{c}.jsonl"
                    f" --source {q(RELEASE)} --out results/gold/bfcl/{c}.jsonl"
                    f" 2> {q(log(work, 'gold', c))}")
    run_jobs(normalize, work, env, cores)
    run_jobs(gold, work, env, cores)


def log(work: Path, stage: str, name: str) -> str:
    path = work / "results/logs" / stage / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path.relative_to(work))


# --- the two timed sides -------------------------------------------------------------------

def published(category: str, kind: str) -> str:
    return f"results/published/{NAME}/bfcl/{category}.{kind}"


def output(stage: str, category: str) -> str:
    return f"results/{stage}/{NAME}/baseline/bfcl/{category}.jsonl"


RUN = f"results/runs/{NAME}/baseline/bfcl"


def toolcalib_jobs(work: Path, results: Path, model: str) -> dict[str, list[str]]:
    """Stage -> the workflow rules' shell commands for this model (per category or one)."""
    spec = json.dumps({"name": NAME, "backend": "replay", "options": {
        "path": str(results), "model": model, "format": "fc"}}, sort_keys=True,
        separators=(",", ":"))
    recorded = "--out-recorded" in help_flags(["toolcalib", "import-run"])
    imports = []
    for c in CATEGORIES:
        imports.append(
            f"toolcalib import-run --model-spec {q(spec)} --benchmark bfcl --category {c}"
            f" --source {q(RELEASE)} --cases results/cases/bfcl/{c}.jsonl --limit all"
            f" --out {output('trajectories', c)} --out-cases {published(c, 'cases.jsonl')}"
            f" --out-records {published(c, 'records.jsonl')}"
            + (f" --out-recorded {published(c, 'recorded.json')}" if recorded else "")
            + f" 2> {q(log(work, 'import_run', c))}")
    files = {name: " ".join(path(c) for c in CATEGORIES) for name, path in {
        "cases": lambda c: f"results/cases/bfcl/{c}.jsonl",  # BFCL's runs: the release's
        "gold": lambda c: f"results/gold/bfcl/{c}.jsonl",
        "trajectories": lambda c: output("trajectories", c),
        "actions": lambda c: output("actions", c),
        "scores": lambda c: output("scores", c)}.items()}
    evaluate = (f"toolcalib evaluate --profile {q(PROFILE)} --benchmark bfcl"
                f" --source {q(RELEASE)}"
                + "".join(f" --{name} {paths}" for name, paths in files.items())
                + f" --per-case {RUN}/per_case.jsonl --triples {RUN}/triples.csv"
                f" 2> {q(log(work, 'evaluate', NAME))}")
    aggregate_help = help_flags(["toolcalib", "aggregate"])
    aggregate = (f"toolcalib aggregate --actions {files['actions']}"
                 f" --runs {RUN}/per_case.jsonl"
                 f" --published {' '.join(published(c, 'records.jsonl') for c in CATEGORIES)}"
                 + (f" --recorded {' '.join(published(c, 'recorded.json') for c in CATEGORIES)}"
                    if recorded and "--recorded" in aggregate_help else "")
                 + f" --out-dir results/metrics 2> {q(log(work, 'aggregate', 'aggregate'))}")
    return {"import-run": imports, "evaluate": [evaluate],
            "aggregate": [aggregate]}


def run_toolcalib(work: Path, jobs: dict[str, list[str]], env: dict[str, str], cores: int
                  ) -> dict[str, tuple[float, float]]:
    """One whole pass: (wall, CPU) per stage, per import-run job and in total."""
    for folder in (f"results/published/{NAME}", f"results/trajectories/{NAME}",
                   f"results/actions/{NAME}", f"results/scores/{NAME}", f"results/runs/{NAME}",
                   "results/metrics"):
        shutil.rmtree(work / folder, ignore_errors=True)
    figures: dict[str, tuple[float, float]] = {}
    for stage, commands in jobs.items():
        wall, cpu, each = run_jobs(commands, work, env, cores)
        figures[stage] = (wall, cpu)
        if stage == "import-run":
            for category, job in zip(CATEGORIES, each, strict=True):
                figures[f"  import-run {category}"] = job
    figures["total"] = tuple(sum(figures[s][i] for s in jobs) for i in (0, 1))
    return figures


def run_bfcl(python: Path, project: Path, model: str, env: dict[str, str]
             ) -> dict[str, tuple[float, float]]:
    shutil.rmtree(project / "score", ignore_errors=True)
    shutil.rmtree(project / ".file_locks", ignore_errors=True)
    argv = [str(python), "-c", BFCL_LAUNCHER, "evaluate", "--model", registry_name(model),
            "--test-category", ",".join(CATEGORIES)]
    bfcl_env = {**env, "BFCL_PROJECT_ROOT": str(project), "OPENAI_API_KEY": "unused",
                "PYTHONIOENCODING": "utf-8"}
    return {"bfcl evaluate": run_process(argv, project, bfcl_env, project / "evaluate.log")}


def registry_name(model: str) -> str:
    """BFCL's registry name of a result folder (the runner reads `_` as `/`)."""
    return model.replace("_", "/")


# --- checks ---------------------------------------------------------------------------------

def score_lines(path: Path) -> tuple[dict, list[dict]]:
    header, *failed = (json.loads(line) for line in read_text(path).splitlines() if line.strip())
    return header, failed


def compare(work: Path, project: Path, results: Path, model: str) -> tuple[list[str], list[str]]:
    """(lines per category, verdict differences): BFCL's fresh headers beside the recorded
    ones, and toolcalib's verdict beside BFCL's on every case toolcalib scored."""
    recorded_root = results.parent / "score" / model
    lines, problems = [], []
    for c in CATEGORIES:
        header, failed = score_lines(project / "score" / model / GROUP[c]
                                     / f"BFCL_v4_{c}_score.json")
        failed_ids = {entry["id"] for entry in failed}
        recorded = [path for path in sorted(recorded_root.rglob("*_score.json*"))
                    if (match := SCORE_FILE.match(path.name)) and match["category"] == c]
        old = score_lines(recorded[0])[0] if recorded else None
        rows = [json.loads(line) for line in
                (work / output("scores", c)).read_text("utf-8").splitlines()]
        scored = [r for r in rows if r["scored"]]
        unscored = [r["case_id"] for r in rows if not r["scored"]]
        why = Counter("release check" if "excluded" in (r["error_message"] or "") else
                      "inference error" if "Error during inference" in (r["error_message"] or "")
                      else "other" for r in rows if not r["scored"])
        differ = [r["case_id"] for r in scored if r["passed"] == (r["case_id"] in failed_ids)]
        problems += [f"{c}: {case}: toolcalib and BFCL differ" for case in differ]
        lines.append(
            f"  {c:<22} BFCL now {header['correct_count']}/{header['total_count']}"
            + (f", recorded {old['correct_count']}/{old['total_count']}" if old else "")
            + f"; toolcalib scored {len(scored)}, passed {sum(r['passed'] for r in scored)},"
            f" verdict = BFCL's on {len(scored) - len(differ)} of {len(scored)}; not scored"
            f" {len(unscored)}" + "".join(f", {k} {v}" for k, v in sorted(why.items()))
            + f" (BFCL passed {sum(case not in failed_ids for case in unscored)} of them)")
    return lines, problems


# --- report ---------------------------------------------------------------------------------

def cpu_model() -> str:
    fields = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return (f"{fields.get('model name', platform.processor())} (family {fields.get('cpu family')},"
            f" model {fields.get('model')}), {os.cpu_count()} CPUs")


def startup_floor(python: Path, work: Path, env: dict[str, str]
                  ) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of 3 processes that only import what each side imports."""
    probes = {
        "toolcalib import-run imports": [sys.executable, "-c", "import toolcalib.cli,"
                                         " toolcalib.stages.import_run,"
                                         " toolcalib.benchmarks.bfcl.plugin"],
        "toolcalib evaluate imports": [sys.executable, "-c", "import toolcalib.cli,"
                                       " toolcalib.stages.evaluate,"
                                       " toolcalib.benchmarks.bfcl.plugin"],
        "toolcalib aggregate imports": [sys.executable, "-c",
                                        "import toolcalib.cli, toolcalib.stages.aggregate"],
        "bfcl evaluate imports": [str(python), "-c", "import bfcl_eval.__main__"],
    }
    bfcl_env = {**env, "BFCL_PROJECT_ROOT": str(work / "bfcl_floor")}
    floor = {}
    for name, argv in probes.items():
        runs = [run_process(argv, work, bfcl_env) for _ in range(3)]
        floor[name] = (statistics.median(r[0] for r in runs),
                       statistics.median(r[1] for r in runs))
    return floor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                        help="BFCL's result folder holding <model>/ (or the run folder"
                        " holding result/); default: the shared gpt-oss runs (vLLM main)")
    parser.add_argument("--model", default="openai_gpt-oss-120b",
                        help="the model's folder (BFCL's registry name, '/' written '_')")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each side,"
                        " after one warm-up")
    parser.add_argument("--cores", type=int, default=1, help="processes for toolcalib's"
                        " per-category jobs (snakemake --cores N)")
    parser.add_argument("--bfcl-venv", type=Path, default=Path(tempfile.gettempdir())
                        / f"toolcalib-bench-bfcl-eval-{PIN['version']}",
                        help="BFCL's own virtual environment (made when absent)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the run here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    results, files = result_files(args.results.resolve(), args.model)
    python = bfcl_venv(args.bfcl_venv)
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="bfcl_import_"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = child_env(work)
    load = [os.getloadavg()[0]]
    try:
        start = time.perf_counter()
        setup(work, env, max(args.cores, 2))
        project = bfcl_project(work, files, args.model)
        jobs = toolcalib_jobs(work, results, args.model)
        n = sum(len(read_text(path).splitlines()) for path in files.values())
        print(f"setup in {work}: {time.perf_counter() - start:.1f} s; {n} records in"
              f" {len(files)} result files under {results / args.model}", flush=True)
        sides = {"toolcalib": lambda: run_toolcalib(work, jobs, env, args.cores),
                 "bfcl": lambda: run_bfcl(python, project, args.model, env)}
        runs: dict[str, list[dict[str, tuple[float, float]]]] = {side: [] for side in sides}
        for r in range(args.repeat + 1):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            figures = {side: sides[side]() for side in order}
            if r:
                for side in sides:
                    runs[side].append(figures[side])
            print(("warm-up" if r == 0 else f"run {r}/{args.repeat}") + ": "
                  f"toolcalib {figures['toolcalib']['total'][0]:.2f} s,"
                  f" bfcl evaluate {figures['bfcl']['bfcl evaluate'][0]:.2f} s", flush=True)
        load.append(os.getloadavg()[0])
        lines, problems = compare(work, project, results, args.model)
        floor = startup_floor(python, work, env)
        tree = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip()
        bfcl_python = subprocess.run([str(python), "-c", "import sys; print(sys.version)"],
                                     capture_output=True, text=True).stdout.strip()
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    def med(side: str, name: str, i: int) -> float:
        return statistics.median(run[name][i] for run in runs[side])

    ours = tuple(med("toolcalib", "total", i) for i in (0, 1))
    theirs = tuple(med("bfcl", "bfcl evaluate", i) for i in (0, 1))
    imports = med("toolcalib", "import-run", 0)
    report = {
        "cpu": cpu_model(), "python": sys.version.split()[0],
        "bfcl_python": bfcl_python.split()[0], "bfcl_eval": PIN["version"],
        "tree": tree, "model": args.model, "results": str(results), "records": n,
        "repeat": args.repeat,
        "cores": args.cores, "load_average_1min": load, "identical": not problems,
        "toolcalib": {name: [med("toolcalib", name, i) for i in (0, 1)]
                      for name in runs["toolcalib"][0]},
        "bfcl": {"bfcl evaluate": list(theirs)},
        "ratio_toolcalib_over_bfcl": [ours[i] / theirs[i] for i in (0, 1)],
        "startup_floor": {name: list(v) for name, v in floor.items()},
    }
    print(f"\n{args.model}: {n} records, {len(CATEGORIES)} categories; median of {args.repeat}"
          f" runs after a warm-up; toolcalib's per-category jobs on {args.cores} process(es)")
    print(f"CPU: {report['cpu']}; 1-min load average {load[0]:.2f} before, {load[1]:.2f} after")
    print(f"Python: toolcalib {report['python']} (tree {tree}), BFCL {report['bfcl_python']}"
          f" (bfcl-eval {PIN['version']})")
    print(f"{'':<44}{'wall s':>9}{'CPU s':>9}")
    for name, (wall, cpu) in report["toolcalib"].items():
        label = "TOOLCALIB " + name if name == name.lstrip() else name
        print(f"{label:<44}{wall:9.2f}{cpu:9.2f}")
    print(f"{'BFCL      bfcl evaluate (one process)':<44}{theirs[0]:9.2f}{theirs[1]:9.2f}")
    print(f"{'ratio toolcalib / bfcl (< 1: toolcalib faster)':<44}"
          f"{ours[0] / theirs[0]:9.3f}{ours[1] / theirs[1]:9.3f}")
    print(f"{'  i.e. bfcl / toolcalib':<44}{theirs[0] / ours[0]:9.2f}{theirs[1] / ours[1]:9.2f}")
    print(f"import-run, five categories: {imports:.2f} s wall (issue 39 target for import"
          f" + classify + score + aggregate: 20 s; whole: {ours[0]:.2f} s)")
    print("one process that only imports (median of 3):")
    for name, (wall, cpu) in floor.items():
        print(f"  {name:<42}{wall:9.2f}{cpu:9.2f}")
    print("CPU s per stage: processes x (start-up + imports, from the line above) + the rest:")
    split = {}
    stages = [(stage, f"toolcalib {stage.split()[0]} imports", len(commands))
              for stage, commands in jobs.items()]
    for stage, probe, count in [*stages, ("bfcl evaluate", "bfcl evaluate imports", 1)]:
        side = "bfcl" if stage == "bfcl evaluate" else "toolcalib"
        cpu = report[side][stage][1]
        start_up = count * floor[probe][1]
        split[stage] = {"cpu": cpu, "processes": count, "start_up": start_up}
        print(f"  {stage:<16}{cpu:6.2f} = {count} x {floor[probe][1]:.2f}"
              f" + {cpu - start_up:5.2f}")
    report["cpu_split"] = split
    print("verdicts:")
    print("\n".join(lines))
    if problems:
        print(f"DIFFERENCES ({len(problems)}):\n  " + "\n  ".join(problems[:20]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
