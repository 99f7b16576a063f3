# Config lookups, input functions and targets shared by every rule.
import json

from toolcalib.backends import MODULES as BACKEND_MODULES
from toolcalib.benchmarks import MODULES as BENCHMARK_MODULES
from toolcalib.codedeps import closure

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


def module_file(module):
    return module.removeprefix("toolcalib.").replace(".", "/") + ".py"


def code(stage, *extra, backends=False, benchmarks=False):
    """Package sources a stage's command runs (its import closure, plus the registered backends
    and benchmarks it may load, which registries import lazily): editing one reruns exactly
    the jobs that run it."""
    registered = [*(BACKEND_MODULES.values() if backends else ()),
                  *(BENCHMARK_MODULES.values() if benchmarks else ())]
    return closure("src", [f"stages/{stage}.py", *map(module_file, registered), *extra])


def release(wildcards):
    return f"results/raw/{wildcards.benchmark}/{BENCHMARKS[wildcards.benchmark]['file']}"


def model_dir(wildcards):
    """The converted weights a model needs, if its config names pinned `source` weights."""
    return [f"results/models/{wildcards.model}"] if MODELS[wildcards.model].get("source") else []


def model_spec(wildcards):
    spec = {k: v for k, v in MODELS[wildcards.model].items() if k not in ("source", "limit")}
    if model_dir(wildcards):
        spec["options"] = {**spec.get("options", {}), "model_dir": model_dir(wildcards)[0]}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def generate_threads(wildcards):
    """A local model takes the whole machine (Snakemake caps this at --cores), so its jobs run
    one at a time instead of fighting over the cores; everything else needs one thread."""
    return 64 if MODELS[wildcards.model]["backend"] == "transformers" else 1


def limit_value(wildcards):
    """Cases per category: the model's own `limit` (a number or per-category map) first."""
    own = MODELS[wildcards.model].get("limit")
    if isinstance(own, dict):
        own = own.get(wildcards.category)
    limit = own if own is not None else LIMIT
    return "all" if limit is None else str(limit)


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


def category_files(folder, benchmark, suffix):
    """`results/<folder>/<benchmark>/<category>.<suffix>` for every category of the benchmark
    (`folder` may hold wildcards, e.g. `actions/{model}/{variant}`)."""
    return [f"results/{folder}/{benchmark}/{c}.{suffix}"
            for c in BENCHMARKS[benchmark]["categories"]]


def run_tables():
    """The per-case table of every (model, variant, benchmark) run."""
    return [f"results/runs/{m}/{v}/{b}/per_case.parquet" for m in sorted(MODELS)
            for v in VARIANTS for b in sorted(BENCHMARKS)]


def case_files():
    return [f"results/cases/{b}/{c}.jsonl" for b in sorted(BENCHMARKS)
            for c in BENCHMARKS[b]["categories"]]


METRICS = [
    "results/metrics/triples.csv",
    "results/metrics/confusion.csv",
    "results/metrics/per_case.parquet",
    "results/metrics/metrics.json",
    "results/metrics/triples.md",
    "results/metrics/shift.csv",
]


PROFILES = ["paper", "default"]
PROFILE_CODE = ["classify/paper.py", "classify/default.py", "data/paper_classifier.yaml",
                "data/default_classifier.yaml"]
"""Profiles load their cue data and are registered lazily: declared here explicitly."""
VALIDATION = [
    "results/metrics/classifier_validation.csv",
    "results/metrics/classifier_summary.csv",
    "results/metrics/classifier_validation.md",
]
MANIFEST = "results/manifest.json"
REPORT = ["results/report/index.html", "results/report/summary.md"]


def release_files():
    return [f"results/raw/{b}/{BENCHMARKS[b]['file']}" for b in sorted(BENCHMARKS)]


def final_targets():
    return [*METRICS, *VALIDATION, *REPORT, MANIFEST]
