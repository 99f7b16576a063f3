"""Where our evaluate / aggregate processes spend their CPU time.

    python bench/stage_breakdown.py --workdir DIR [--model always_call|oracle] [--profile P]
                                    [--pycache DIR]

DIR is a run kept by `python bench/scoring_speed.py --workdir DIR` (same --model). The
workflow's two jobs for the model (`evaluate`, then `aggregate`) run once more, each as its own
process, through a thin wrapper that splits the process's CPU time (user + system,
`time.process_time`) into:

- `start`: interpreter start-up and `site` before the wrapper's first line;
- `imports`: `toolcalib.cli`, the stage module and the benchmark module it loads;
- `parse`: reading JSONL records (cases and trajectories; evaluate only; gold traces in `rest`);
- `classify`: the classifier profile over every emission, action rows (evaluate only);
- `env`: building each multi-turn case's simulated API instances (evaluate only);
- `write`: tables and output files (evaluate: the action and score tables and the run's
  per-case table and triples; aggregate: every metrics table);
- `rest`: everything else (checking, score records).

The wrapper calls `toolcalib.cli.main` with the job's exact arguments, so the work is the
workflow's; only the `toolcalib` launcher is left out. `--pycache DIR` lets the processes keep
compiled bytecode under DIR (this sandbox sets PYTHONDONTWRITEBYTECODE=1, so without it every
process compiles our modules again).
"""

from __future__ import annotations

import time

START = time.process_time()  # noqa: E402 - interpreter + site, before anything else

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

PARTS = ("start", "imports", "parse", "classify", "env", "write", "rest")


def timer(spent: dict[str, float], part: str, function):
    def wrapped(*args, **kwargs):
        begin = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[part] += time.process_time() - begin
    return wrapped


def job(argv: list[str]) -> None:
    """Run one stage in this process and print its CPU split as one JSON line."""
    spent: dict[str, float] = defaultdict(float)
    spent["start"] = START
    begin = time.process_time()
    cli = importlib.import_module("toolcalib.cli")
    stage = importlib.import_module(f"toolcalib.stages.{argv[0]}")
    if argv[0] == "evaluate":
        importlib.import_module("toolcalib.benchmarks.bfcl.plugin")
    spent["imports"] = time.process_time() - begin
    if argv[0] == "evaluate":
        core = importlib.import_module("toolcalib.evaluate")
        core.read_records = timer(spent, "parse", core.read_records)
        core.action_rows = timer(spent, "classify", core.action_rows)
        multi_turn = importlib.import_module("toolcalib.benchmarks.bfcl.checker")
        multi_turn.case_environment = timer(spent, "env", multi_turn.case_environment)
        for name in ("score_rows", "jsonl_bytes", "csv_bytes", "atomic_write_bytes",
                     "case_rows", "triple_rows"):
            setattr(stage, name, timer(spent, "write", getattr(stage, name)))
    else:
        stage.write_outputs = timer(spent, "write", stage.write_outputs)
    begin = time.process_time()
    with open(os.devnull, "w") as sink:
        stderr, sys.stderr = sys.stderr, sink
        try:
            code = cli.main(argv)
        finally:
            sys.stderr = stderr
    if code:
        raise SystemExit(f"job failed ({code}): {shlex.join(argv)}")
    total = time.process_time() - begin
    spent["rest"] = total - sum(spent[part] for part in PARTS[2:-1])
    print(json.dumps({part: spent[part] for part in PARTS}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--model", default="always_call", choices=("always_call", "oracle"))
    parser.add_argument("--profile", default="paper", help="classifier profile for classify")
    parser.add_argument("--pycache", default=None, help="keep bytecode here (PYTHONPYCACHEPREFIX)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from scoring_speed import our_jobs

    work = Path(args.workdir).resolve()
    env = dict(os.environ, TZ="UTC")
    if args.pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(args.pycache).resolve())
    rows = []
    for command in our_jobs(work, f"policy-{args.model}", args.profile):
        argv = shlex.split(command.split(" 2> ")[0])[1:]  # drop `toolcalib` and the log
        if args.pycache:  # a first run fills the bytecode cache
            subprocess.run([sys.executable, __file__, "--job", *argv], cwd=work, env=env,
                           check=True, capture_output=True)
        done = subprocess.run([sys.executable, __file__, "--job", *argv], cwd=work, env=env,
                              check=True, capture_output=True, text=True)
        rows.append((f"{argv[0]} (6 categories)", json.loads(done.stdout.splitlines()[-1])))
    header = f"{'job':<34}" + "".join(f"{part:>9}" for part in PARTS) + f"{'total':>9}"
    print(f"CPU seconds per process (policy-{args.model}"
          f"{', bytecode cached' if args.pycache else ', no bytecode cache'})\n{header}")
    sums: dict[str, float] = defaultdict(float)
    for label, spent in rows:
        for part in PARTS:
            sums[part] += spent[part]
        print(f"{label:<34}" + "".join(f"{spent[p]:9.2f}" for p in PARTS)
              + f"{sum(spent.values()):9.2f}")
    print(f"{'both processes':<34}" + "".join(f"{sums[p]:9.2f}" for p in PARTS)
          + f"{sum(sums.values()):9.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--job"]:
        job(sys.argv[2:])
    else:
        main()
