# Config lookups, input functions and targets shared by every rule.
import json
import re
import shlex
from pathlib import Path

from toolcalib.backends import BACKENDS
from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import PLUGINS
from toolcalib.benchmarks import get_benchmark, section_settings, settings
from toolcalib.pipeline.codedeps import closure
from toolcalib.pipeline.schedule import generate_priority

PATH_SAFE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
MODELS = {model["name"]: model for model in config["models"]}  # names checked unique (Snakefile)
BENCHMARKS = config["benchmarks"]
VARIANTS = config["variants"]
LIMIT = None if str(config["limit"]) in ("None", "null") else int(config["limit"])


wildcard_constraints:
    model=PATH_SAFE,
    variant=PATH_SAFE,
    benchmark=PATH_SAFE,
    category=PATH_SAFE,


REPLAYED = sorted(name for name, model in MODELS.items() if model["backend"] == "replay")
"""Published runs: imported by their benchmark's plugin (rule `import_run`), not generated."""
GENERATED_MODEL = (f"(?!(?:{'|'.join(map(re.escape, REPLAYED))})(?![A-Za-z0-9_.-])){PATH_SAFE}"
                   if REPLAYED else PATH_SAFE)
"""Any model name but a published run's (a lookahead: the name may not end there)."""
REPLAYED_MODEL = "|".join(map(re.escape, REPLAYED)) or "(?!)"


def published_files(wildcards):
    """The files a published run's import reads (its benchmark's plugin says which)."""
    options = ReplayOptions(**MODELS[wildcards.model]["options"])
    return get_benchmark(wildcards.benchmark).published_files(options)


def own_cases(model, benchmark):
    """Whether `model` is a published run whose files embed the benchmark's cases."""
    return model in REPLAYED and get_benchmark(benchmark).embeds_cases


def run_inputs(kind, model, benchmark):
    """A run's `cases` or `gold` per category: the release's, or a published run's own."""
    if own_cases(model, benchmark):
        return [f"results/published/{model}/{benchmark}/{c}.{kind}.jsonl"
                for c in BENCHMARKS[benchmark]["categories"]]
    return category_files(kind, benchmark, "jsonl")


def module_file(module):
    return module.removeprefix("toolcalib.").replace(".", "/") + ".py"


def code(stage, *extra, backends=False, benchmark=None):
    """Package sources a stage's command runs (its import closure, plus the registered backends
    and the benchmark it loads, which registries import lazily): editing one reruns exactly
    the jobs that run it (a benchmark's package reruns only that benchmark's jobs)."""
    registered = [*(map(BACKENDS.module, BACKENDS) if backends else ()),
                  *([PLUGINS.module(benchmark)] if benchmark else ())]
    return closure("src", [f"stages/{stage}.py", *map(module_file, registered), *extra])


def benchmark_code(stage, **kwargs):
    """`code` as an input function of a rule with a `{benchmark}` wildcard."""
    return lambda wildcards: code(stage, benchmark=wildcards.benchmark, **kwargs)


def release(wildcards):
    return f"results/raw/{wildcards.benchmark}/{BENCHMARKS[wildcards.benchmark]['file']}"


def converted(name):
    """The converted weights model `name` needs, if its config names pinned `source` weights."""
    return [f"results/models/{name}"] if MODELS[name].get("source") else []


def model_dir(wildcards):
    return converted(wildcards.model)


RUN_FIELDS = ("source", "limit", "cases", "variants", "benchmarks")
"""Model fields that say what runs, not how the model answers: not part of its spec."""


def spec_json(name, overrides=None):
    """The `--model-spec` JSON of model `name`, `overrides` merged into its options."""
    spec = {k: v for k, v in MODELS[name].items() if k not in RUN_FIELDS}
    extra = {**(overrides or {}), **{"model_dir": d for d in converted(name)}}
    if extra:
        spec["options"] = {**spec.get("options", {}), **extra}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def model_spec(wildcards):
    return spec_json(wildcards.model)


def section_options(benchmark, kind):
    """The fields of a settings record of the benchmark (`case_settings`, `loop_settings`)
    its config section sets, as ` --benchmark-options JSON` ('' when it sets none)."""
    options = section_settings(kind, BENCHMARKS[benchmark])
    if not options:
        return ""
    return f" --benchmark-options {shlex.quote(json.dumps(options, sort_keys=True))}"


def user_model(benchmark):
    """The `models` entry playing the benchmark's simulated user, if any (its loop's)."""
    kind = get_benchmark(benchmark).loop_settings
    return settings(kind, section_settings(kind, BENCHMARKS[benchmark])).user_model()


def loop_options(wildcards):
    """The loop's ` --benchmark-options JSON` (and ` --user-spec JSON` when a model plays the
    user), else ''."""
    text = section_options(wildcards.benchmark, get_benchmark(wildcards.benchmark).loop_settings)
    user = user_model(wildcards.benchmark)
    if user is not None:
        text += f" --user-spec {shlex.quote(spec_json(user))}"
    return text


def case_options(wildcards):
    """The cases' ` --benchmark-options JSON`, else '' (BFCL: its normalize command
    unchanged)."""
    return section_options(wildcards.benchmark, get_benchmark(wildcards.benchmark).case_settings)


def user_model_dir(wildcards):
    """The converted weights of the model playing a benchmark's simulated user, if any."""
    user = user_model(wildcards.benchmark)
    return converted(user) if user is not None else []


def generate_threads(wildcards):
    """A local model job claims `LOCAL_MODEL_THREADS`; everything else needs one thread."""
    return LOCAL_MODEL_THREADS if MODELS[wildcards.model]["backend"] in LOCAL_BACKENDS else 1


def generate_job_priority(wildcards):
    """A model's jobs start in `schedule.generate_priority`'s order, so the store answers what
    its jobs share; the reference policies (nothing stored, a second each) keep 0."""
    if MODELS[wildcards.model]["backend"] == "policy":
        return 0
    benchmark = wildcards.benchmark
    return generate_priority(model_variants(wildcards.model), BENCHMARKS[benchmark]["categories"],
                             get_benchmark(benchmark).opens_as, wildcards.variant,
                             wildcards.category)


def limit_value(wildcards):
    """Cases per category: the model's own `limit` (a number or per-category map) first."""
    own = MODELS[wildcards.model].get("limit")
    if isinstance(own, dict):
        own = own.get(wildcards.category)
    limit = own if own is not None else LIMIT
    return "all" if limit is None else str(limit)


def case_ids_option(wildcards):
    """` --case-ids ...` when the model pins this category's cases (its `cases` map), else ''."""
    ids = (MODELS[wildcards.model].get("cases") or {}).get(wildcards.category)
    return f" --case-ids {shlex.quote(','.join(ids))}" if ids else ""


def model_variants(model):
    """The variants a model runs: its own `variants` if it names some, else the run's."""
    return MODELS[model].get("variants") or VARIANTS


def benchmark_variants(model, benchmark):
    """The variants `model` runs on `benchmark` (none if its `benchmarks` leave it out)."""
    chosen = MODELS[model].get("benchmarks")
    if chosen is None:
        return model_variants(model)
    if benchmark not in chosen:
        return []
    return chosen[benchmark] or model_variants(model)


def runs():
    """Every (model, variant, benchmark, category) the config asks for, in a stable order."""
    return [
        (model, variant, benchmark, category)
        for model in sorted(MODELS)
        for variant in model_variants(model)
        for benchmark in sorted(BENCHMARKS)
        if variant in benchmark_variants(model, benchmark)
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
    return [f"results/runs/{m}/{v}/{b}/per_case.jsonl" for m in sorted(MODELS)
            for v in model_variants(m) for b in sorted(BENCHMARKS)
            if v in benchmark_variants(m, b) and BENCHMARKS[b]["categories"]]


def published_records():
    """The records table of every published run's import."""
    return [f"results/published/{m}/{b}/{c}.records.jsonl" for m in REPLAYED
            for b in sorted(BENCHMARKS) if "baseline" in benchmark_variants(m, b)
            for c in BENCHMARKS[b]["categories"]]


def import_jobs():
    """Every (model, benchmark, category) a published run is imported for."""
    return [(m, b, c) for m in REPLAYED for b in sorted(BENCHMARKS)
            if "baseline" in benchmark_variants(m, b) for c in BENCHMARKS[b]["categories"]]


def published_imports():
    """The status of every published run's import (`<category>.import.json`: its records by
    fate, or the one-line reason it failed), for the report (the status footer reads them)."""
    return [f"results/published/{m}/{b}/{c}.import.json" for m, b, c in import_jobs()]


def imports_option(wildcards=None):
    """` --imports FILES` for the report stage, or '' without a published run."""
    files = published_imports()
    return f" --imports {' '.join(map(shlex.quote, files))}" if files else ""


def published_option(wildcards=None):
    """` --published FILES` for the aggregate stage, or '' without a published run."""
    files = published_records()
    return f" --published {' '.join(map(shlex.quote, files))}" if files else ""


def published_recorded():
    """The benchmark's own recorded headline of every published run's category (its import's
    `<category>.recorded.json`), for the leaderboard."""
    return [f"results/published/{m}/{b}/{c}.recorded.json" for m in REPLAYED
            for b in sorted(BENCHMARKS) if "baseline" in benchmark_variants(m, b)
            for c in BENCHMARKS[b]["categories"]]


def recorded_option(wildcards=None):
    """` --recorded FILES` for the aggregate stage, or '' without a published run."""
    files = published_recorded()
    return f" --recorded {' '.join(map(shlex.quote, files))}" if files else ""


def pairs_option(wildcards=None):
    """` --pairs JSON` (the config's model-vs-model `pairs`, checked with the config) for the
    aggregate stage, or '' without any."""
    pairs = config.get("pairs")
    if not pairs:
        return ""
    return f" --pairs {shlex.quote(json.dumps(pairs, sort_keys=True, separators=(',', ':')))}"


def case_files():
    """Every case file a run scores: the releases', then the published runs' own."""
    return [*(f"results/cases/{b}/{c}.jsonl" for b in sorted(BENCHMARKS)
              for c in BENCHMARKS[b]["categories"]),
            *(f"results/published/{m}/{b}/{c}.cases.jsonl" for m in REPLAYED
              for b in sorted(BENCHMARKS)
              if "baseline" in benchmark_variants(m, b) and own_cases(m, b)
              for c in BENCHMARKS[b]["categories"])]


METRICS = [
    "results/metrics/triples.csv",
    "results/metrics/confusion.csv",
    "results/metrics/per_case.parquet",
    "results/metrics/metrics.json",
    "results/metrics/triples.md",
    "results/metrics/shift.csv",
    "results/metrics/published.csv",
    "results/metrics/leaderboard.csv",
    "results/metrics/recorded.csv",
    "results/metrics/pairs.csv",
    "results/metrics/pair_flips.csv",
]


JUDGE = config.get("judge")
"""The `judge` profile's model (an entry of `models`, not a policy: checked with the config) and
its option overrides, if any."""
PROFILES = ["paper", "default", *(["judge"] if JUDGE else [])]
PROFILE_CODE = ["classify/paper.py", "classify/default.py", "classify/judge.py",
                "data/paper_classifier.yaml", "data/default_classifier.yaml"]
"""Profiles load their cue data and are registered (the judge imported) lazily: declared here
explicitly."""
JUDGE_CODE = ([module_file(BACKENDS.module(MODELS[JUDGE["model"]]["backend"])),
               "data/judge_rubric.yaml", "classify/confirm_judge.py", "data/confirm_rubric.yaml"]
              if JUDGE else [])
"""What a stage running the judge also runs: its rubrics (emissions, τ²'s writes), its confirm
verdict and its (lazily loaded) backend."""
CONFIRM_CORPUS = config.get("confirm_corpus") if JUDGE else None
"""The hand-labelled write contexts the judge's confirm verdict is validated on, beside the
rule's (only with a judge: the rule's figures are a fast test's)."""
CLASSIFIER_JUDGE = config["classifier"] == "judge"
"""The triples' actions come from the judge: the evaluate jobs run it."""
LOCAL_BACKENDS = ("transformers", "llamacpp")
"""Backends that compute on this machine's cores (one thread each by default)."""
JUDGE_LOCAL = bool(JUDGE) and MODELS[JUDGE["model"]]["backend"] in LOCAL_BACKENDS
"""A local judge claims half of --cores, as a local model's generate job does."""
LOCAL_MODEL_THREADS = 4
"""What a local-model job claims (it runs one torch thread by default): under the README's
`--cores 8` two run side by side; Snakemake scales the claim down to a smaller --cores."""


def judge_inputs(wildcards=None):
    """The judge model's converted weights, if it has any (empty without a judge)."""
    return converted(JUDGE["model"]) if JUDGE else []


def judge_args(wildcards=None):
    """The command-line arguments (each after a space) that give a stage the judge and the
    response store; empty without a judge."""
    if not JUDGE:
        return ""
    spec = spec_json(JUDGE["model"], JUDGE.get("options"))
    return f" --judge-spec {shlex.quote(spec)} --store {shlex.quote(config['store'])}"
VALIDATION = [
    "results/metrics/classifier_validation.csv",
    "results/metrics/classifier_summary.csv",
    "results/metrics/classifier_validation.md",
]
CONFIRM_VALIDATION = ([
    "results/metrics/confirm_validation.csv",
    "results/metrics/confirm_validation.md",
] if CONFIRM_CORPUS else [])
MANIFEST = "results/manifest.json"
REPORT = ["results/report/index.html", "results/report/summary.md"]


def release_files():
    return [f"results/raw/{b}/{BENCHMARKS[b]['file']}" for b in sorted(BENCHMARKS)]


def final_targets():
    return [*METRICS, *VALIDATION, *CONFIRM_VALIDATION, *REPORT, MANIFEST]
