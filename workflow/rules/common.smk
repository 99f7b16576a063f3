# Config lookups, input functions and targets shared by every rule.
import json
from pathlib import Path

PATH_SAFE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
MODELS = {model["name"]: model for model in config["models"]}
if len(MODELS) != len(config["models"]):
    raise ValueError("config 'models': model names must be unique")
BENCHMARKS = config["benchmarks"]
VARIANTS = config["variants"]
LIMIT = None if str(config["limit"]) in ("None", "null") else int(config["limit"])


wildcard_constraints:
    model=PATH_SAFE,
    variant=PATH_SAFE,
    benchmark=PATH_SAFE,
    category=PATH_SAFE,


def code(*modules):
    """Package sources a rule's command runs: editing them reruns exactly those jobs."""
    common = ["__init__.py", "cli.py", "stages.py", "records.py", "jsonio.py"]
    return sorted({f"src/toolcalib/{name}" for name in common + list(modules)})


def release(wildcards):
    return f"results/raw/{wildcards.benchmark}/{BENCHMARKS[wildcards.benchmark]['file']}"


def model_spec(wildcards):
    return json.dumps(MODELS[wildcards.model], sort_keys=True, separators=(",", ":"))


def limit_flag(wildcards):
    return "" if LIMIT is None else f"--limit {LIMIT}"


def runs():
    """Every (model, variant, benchmark, category) the config asks for, in a stable order."""
    return [
        (model, variant, benchmark, category)
        for model in sorted(MODELS)
        for variant in VARIANTS
        for benchmark in sorted(BENCHMARKS)
        for category in BENCHMARKS[benchmark]["categories"]
    ]


def run_files(stage, suffix):
    return [f"results/{stage}/{m}/{v}/{b}/{c}.{suffix}" for m, v, b, c in runs()]


def case_files():
    return [f"results/cases/{b}/{c}.jsonl" for b in sorted(BENCHMARKS)
            for c in BENCHMARKS[b]["categories"]]


METRICS = [
    "results/metrics/triples.csv",
    "results/metrics/confusion.csv",
    "results/metrics/per_case.parquet",
    "results/metrics/metrics.json",
    "results/metrics/triples.md",
]


def final_targets():
    return METRICS
