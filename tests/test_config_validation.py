"""The config is validated whole before any job: a corpus of broken overlays, each failing with
one line naming the config file(s), the field and what is allowed (`config_schema` directly,
three of them through a real `snakemake -n`), a variant a benchmark does not run among them;
every shipped config still validates."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from tests.support.config_overlays import DEFAULT, ROOT, message, validate
from toolcalib.backends import BACKENDS, OPTIONS
from toolcalib.benchmarks import CONFIGS, PLUGINS
from toolcalib.benchmarks.tau2.gold import ASK_GOLD
from toolcalib.pipeline.config_schema import (
    ConfigError,
    ModelEntry,
    check_config,
    config_schema,
    options_schema,
)
from toolcalib.variants import VARIANTS

BASE = yaml.safe_load((ROOT / DEFAULT).read_text())
MODELS = [m for m in BASE["models"] if m["backend"] != "replay"]
"""The default models less the published runs: overlays index these."""
OPENAI = {"name": "served", "backend": "openai",
          "options": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
REPLAY = {"name": "published", "backend": "replay",
          "options": {"path": "tests/data/replay", "model": "demo-FC", "format": "fc"},
          "variants": ["baseline"]}
TAU2_RUNS = "(tau2 runs: baseline, system-permission, no-tools-visible)"
OPENAI_KEYS = "api_key_env, backoff_s, base_url, context_window, max_concurrency, max_retries"


def openai(**options: Any) -> dict[str, Any]:
    return {**OPENAI, "options": {**OPENAI["options"], **options}}


BROKEN = [  # (id, overlay, --config values, the message's start, what else it names)
    ("unknown-backend", {"models": [*MODELS, {"name": "x", "backend": "gpt"}]}, None,
     "OVERLAY: models[8].backend: unknown value 'gpt' (allowed: ",
     ["openai, policy, replay, transformers"]),
    ("unknown-option", {"models": [*MODELS[:3], openai(max_concurency=2)]}, None,
     "OVERLAY: models[3].options.max_concurency: unknown key in options of backend 'openai' "
     "(allowed: ", [OPENAI_KEYS, "max_concurrency"]),
    ("wrong-option-type", {"models": [openai(max_retries="five")]}, None,
     "OVERLAY: models[0].options.max_retries: expected integer >= 0, got 'five'", []),
    ("option-out-of-range", {"models": [openai(max_concurrency=0)]}, None,
     "OVERLAY: models[0].options.max_concurrency: 0 is less than the minimum of 1", []),
    ("nullable-option-type", {"models": [openai(context_window="big")]}, None,
     "OVERLAY: models[0].options.context_window: expected integer >= 1 or null, got 'big'", []),
    ("missing-option", {"models": [{**OPENAI, "options": {"base_url": "http://h"}}]}, None,
     "OVERLAY: models[0].options.model: missing in options of backend 'openai'", []),
    ("local-model-without-weights",
     {"models": [{"name": "local", "backend": "transformers", "options": {}}]}, None,
     "OVERLAY: models[0].options.model_dir: missing in options of backend 'transformers'",
     ["give the model a `source`"]),
    ("unknown-policy", {"models": [{**MODELS[0], "options": {"policy": "psychic"}}]}, None,
     "OVERLAY: models[0].options.policy: unknown value 'psychic' (allowed: oracle, ", []),
    ("policy-extra-option", {"models": [{**MODELS[0], "options": {"policy": "oracle", "x": 1}}]},
     None, "OVERLAY: models[0].options.x: unknown key in options of backend 'policy' "
     "(allowed: policy)", []),
    ("wrong-model-type", {"models": [{**MODELS[0], "batch_size": "4"}]}, None,
     "OVERLAY: models[0].batch_size: expected integer >= 1, got '4'", []),
    ("duplicate-name", {"models": [MODELS[0], MODELS[0]]}, None,
     "OVERLAY: models[1].name: 'policy-oracle' collides with models[0].name 'policy-oracle'",
     []),
    ("name-collides-escaped",
     {"models": [*MODELS, {**MODELS[0], "name": "qwen2_5-coder-0.5b"}]}, None,
     "OVERLAY: models[8].name: 'qwen2_5-coder-0.5b' collides with models[7].name "
     "'qwen2.5-coder-0.5b' (names must differ after '.' -> '_'", ["ignoring case"]),
    ("name-collides-case", {"models": [MODELS[0], {**MODELS[1], "name": "Policy-Oracle"}]},
     None, "OVERLAY: models[1].name: 'Policy-Oracle' collides with models[0].name", []),
    ("name-not-a-path", {"models": [{**MODELS[0], "name": "a/b"}]}, None,
     "OVERLAY: models[0].name: 'a/b' does not match ", []),
    ("judge-unknown-model", {"judge": {"model": "nobody"}}, None,
     f"OVERLAY, {DEFAULT}: judge.model: 'nobody' is not in 'models' (known: "
     "claude-sonnet-4-5, gpt-oss-120b, toolorchestra, policy-oracle, ",
     ["qwen2.5-coder-0.5b"]),
    ("judge-is-a-policy", {}, {"judge": {"model": "policy-oracle"}},
     f"--config, {DEFAULT}: judge.model: 'policy-oracle' is a reference policy, which cannot "
     "judge (allowed: smollm2-135m, qwen2.5-coder-0.5b)", []),
    ("judge-unknown-option", {"judge": {"model": "smollm2-135m", "options": {"max_new": 4}}},
     None, "OVERLAY: judge.options.max_new: unknown key in options of backend 'transformers' "
     "(allowed: ", ["max_new_tokens"]),
    ("judge-unknown-key", {"judge": {"model": "smollm2-135m", "rubric": "x"}}, None,
     "OVERLAY: judge.rubric: unknown key (allowed: model, options)", []),
    ("judge-profile-without-judge", {"classifier": "judge"}, None,
     "OVERLAY: classifier: classifier 'judge' needs a 'judge' section", []),
    ("unknown-variant", {"variants": ["baseline", "sri-gat"]}, None,
     "OVERLAY: variants[1]: unknown value 'sri-gat' (allowed: baseline, cri-retry, ", []),
    ("unknown-model-variant", {"models": [{**MODELS[0], "variants": ["permission"]}]}, None,
     "OVERLAY: models[0].variants[0]: unknown value 'permission' (allowed: baseline, ",
     ["system-permission"]),
    ("unknown-benchmark", {"benchmarks": {"bfcl-v3": {}}}, None,
     "OVERLAY: benchmarks.bfcl-v3: unknown key (allowed: bfcl, tau2)", []),
    ("unknown-category", {"benchmarks": {"bfcl": {"categories": ["simple"]}}}, None,
     "OVERLAY: benchmarks.bfcl.categories[0]: unknown value 'simple' (allowed: "
     "multi_turn_base, ", ["live_irrelevance"]),
    ("unknown-ask-gold", {"benchmarks": {"tau2": {"ask_gold": "all"}}}, None,
     "OVERLAY: benchmarks.tau2.ask_gold: unknown value 'all' (allowed: published, candidates, "
     "strict)", []),
    ("bad-benchmark-pin", {"benchmarks": {"bfcl": {"sha256": "abc"}}}, None,
     "OVERLAY: benchmarks.bfcl.sha256: 'abc' does not match ", []),
    ("unknown-top-level-key", {}, {"limits": 1},
     "--config: limits: unknown key (allowed: benchmarks, classifier, ", []),
    ("bad-limit", {"limit": 0}, None, "OVERLAY: limit: 0 is less than the minimum of 1", []),
    ("bad-model-limit", {"models": [{**MODELS[6], "limit": {"airline": -1}}]}, None,
     "OVERLAY: models[0].limit", ["-1"]),
    ("variant-not-on-benchmark",
     {"models": [{**MODELS[6], "variants": ["baseline", "sri"],
                  "benchmarks": {"bfcl": None, "tau2": ["baseline", "sri"]}}]},
     None, "OVERLAY: models[0].benchmarks.tau2[1]: model 'smollm2-135m': variant 'sri' does "
     f"not run on benchmark 'tau2' {TAU2_RUNS}", []),
    ("model-variant-not-on-benchmark", {"models": [{**OPENAI, "variants": ["cri-retry"]}]},
     None, "OVERLAY: models[0].variants[0]: model 'served': variant 'cri-retry' does not run "
     f"on benchmark 'tau2' {TAU2_RUNS}", []),
    ("run-variant-not-on-benchmark", {"models": [OPENAI], "variants": ["baseline", "sri"]},
     None, "OVERLAY: variants[1]: model 'served': variant 'sri' does not run on "
     f"benchmark 'tau2' {TAU2_RUNS}", []),
    ("replay-not-baseline", {"models": [{**REPLAY, "variants": ["baseline", "sri-gate"]}]}, None,
     "OVERLAY: models[0].variants[1]: model 'published': variant 'sri-gate' does not run on "
     "benchmark 'bfcl' (backend 'replay' runs: baseline)", []),
    ("replay-under-the-run-variants",
     {"models": [{k: v for k, v in REPLAY.items() if k != "variants"}]}, None,
     f"{DEFAULT}, OVERLAY: variants[1]: model 'published': variant 'no-tools-visible' does "
     "not run on benchmark 'bfcl' (backend 'replay' runs: baseline)", []),
]


@pytest.mark.parametrize(("overlay", "cli", "start", "names"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_a_broken_config_is_one_line_naming_file_field_and_what_is_allowed(
        tmp_path: Path, overlay: dict[str, Any], cli: dict[str, Any] | None, start: str,
        names: list[str]) -> None:
    text = message(tmp_path, overlay, cli)
    assert text.startswith(start), text
    for name in names:
        assert name in text, text


def test_a_missing_top_level_key_names_every_config_file(tmp_path: Path) -> None:
    config = {k: v for k, v in BASE.items() if k != "store"}
    with pytest.raises(ConfigError) as caught:
        check_config(config, [(DEFAULT, config), ("b.yaml", {"limit": 1})])
    assert str(caught.value) == f"{DEFAULT}, b.yaml: store: missing (required)"


SHIPPED = sorted([*(ROOT / "config").glob("*.yaml"), *(ROOT / "tests/data").glob("*.yaml")])


@pytest.mark.parametrize("overlay", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_config_validates(tmp_path: Path, overlay: Path) -> None:
    config = validate(tmp_path, yaml.safe_load(overlay.read_text()) or {})
    # the YAML schema's defaults are filled in as Snakemake's `validate` did; the options'
    # own defaults are not (a model's identity holds what the config sets)
    assert all("options" in m and "batch_size" in m for m in config["models"])
    policies = [m for m in config["models"] if m["backend"] == "policy"]
    assert all(set(m["options"]) == {"policy"} for m in policies)


def test_openai_and_replay_models_are_accepted(tmp_path: Path) -> None:
    config = validate(tmp_path, {"models": [*MODELS[:1], {**OPENAI, "benchmarks": {"bfcl": None}},
                                            REPLAY]})
    assert config["models"][2]["options"]["format"] == "fc"


def test_variants_each_benchmark_runs_are_accepted(tmp_path: Path) -> None:
    """BFCL runs every variant, τ² those its loop applies, a replayed run `baseline`; a
    benchmark without categories runs nothing (nothing to refuse)."""
    on_tau2 = {"bfcl": None, "tau2": ["baseline", "system-permission", "no-tools-visible"]}
    validate(tmp_path, {"variants": sorted(VARIANTS),
                        "models": [{**OPENAI, "benchmarks": on_tau2}, REPLAY]})
    validate(tmp_path, {"variants": ["sri", "cri-retry"], "models": [OPENAI],
                        "benchmarks": {"tau2": {"categories": []}}})


def test_the_schema_is_generated_from_the_typed_records() -> None:
    """One declaration per field: the top level and a model entry from `WorkflowConfig` (a
    model entry is the stages' `ModelSpec` plus what it runs), the backends, options, variants
    and benchmark sections from the registries; no hand-kept schema file."""
    assert set(OPTIONS) == set(BACKENDS) and set(CONFIGS) == set(PLUGINS)
    assert not (ROOT / "workflow/schemas").exists()
    schema = config_schema()
    model = schema["$defs"]["ModelEntry"]
    assert set(model["properties"]) == set(ModelEntry.__struct_fields__)
    assert model["properties"]["backend"]["enum"] == sorted(OPTIONS)
    assert model["properties"]["options"]["type"] == "object"  # checked per backend, once
    for backend in OPTIONS:
        options = options_schema(backend)
        assert options["additionalProperties"] is False
        assert set(options["properties"]) == set(OPTIONS.load(backend).__struct_fields__)
    assert "model_dir" in options_schema("transformers")["required"]  # given from `source`
    assert schema["properties"]["variants"]["items"]["enum"] == sorted(VARIANTS)
    sections = schema["properties"]["benchmarks"]["properties"]
    assert set(sections) == set(CONFIGS)
    for name, section in sections.items():  # the msgspec record, settings fields included
        record = CONFIGS.load(name)
        assert section["additionalProperties"] is False
        assert set(section["properties"]) == set(record.__struct_fields__)
        assert issubclass(record, msgspec.Struct)
    assert sections["tau2"]["properties"]["ask_gold"]["enum"] == list(ASK_GOLD)  # as declared


def test_options_models_import_without_the_backends_dependencies() -> None:
    code = ("import sys; from toolcalib.backends import OPTIONS; "
            "[OPTIONS.load(name) for name in OPTIONS]; "
            "print(sorted({'torch', 'transformers', 'httpx'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- through Snakemake ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow, configs and code in a fresh folder (dry runs only)."""
    root = tmp_path_factory.mktemp("config-project")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("workflow", "config", "src", "tests/data"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    shutil.copy2(ROOT / "Snakefile", root / "Snakefile")
    return root


def dry_run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["snakemake", "-n", "--nolock", *args], cwd=project,
                          capture_output=True, text=True)


def written(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob("*")
                  if "__pycache__" not in p.parts)


@pytest.mark.parametrize(("overlay", "config", "line"), [
    ({"models": [*MODELS[:3], openai(max_concurency=2)]}, [],
     "{overlay}: models[3].options.max_concurency: unknown key in options of backend 'openai' "
     "(allowed: api_key_env, backoff_s, base_url, context_window, max_concurrency, max_retries, "
     "max_tokens, model, seed, temperature, timeout_s, tools_mode, weights_sha256)"),
    ({"limit": 2}, ["--config", "judge={model: nobody}"],
     "--config, {overlay}: judge.model: 'nobody' is not in 'models' (known: policy-oracle, "
     "policy-never_call)"),
    ({"models": [{**OPENAI, "variants": ["sri"]}],
      "benchmarks": {"tau2": {"categories": ["airline"]}}}, [],
     "{overlay}: models[0].variants[0]: model 'served': variant 'sri' does not run on "
     f"benchmark 'tau2' {TAU2_RUNS}"),
], ids=["unknown-option", "judge-unknown-model", "variant-not-on-benchmark"])
def test_snakemake_dry_run_stops_before_any_job_with_the_line(
        project: Path, tmp_path: Path, overlay: dict[str, Any], config: list[str],
        line: str) -> None:
    overlay_file = tmp_path / "bad.yaml"
    tiny = yaml.safe_load((ROOT / "tests/data/tiny.yaml").read_text())
    overlay_file.write_text(yaml.safe_dump({**tiny, **overlay}))
    before = written(project)
    done = dry_run(project, "--configfile", str(overlay_file), *config)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == line.format(overlay=overlay_file)
    assert "Building DAG" not in done.stdout + done.stderr and "Job stats" not in done.stdout
    assert written(project) == before  # nothing ran, nothing was written


def test_snakemake_dry_run_plans_a_replay_model(project: Path, tmp_path: Path) -> None:
    overlay_file = tmp_path / "replay.yaml"
    overlay_file.write_text(yaml.safe_dump({"models": [REPLAY], "variants": ["baseline"]}))
    done = dry_run(project, "--configfile", "tests/data/tiny.yaml", str(overlay_file), "-p",
                   "results/runs/published/baseline/bfcl/per_case.jsonl")
    assert done.returncode == 0, done.stderr
    assert '"backend":"replay"' in done.stdout


EXAMPLES = sorted((ROOT / "config/examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_each_example_overlay_validates_and_dry_runs(project: Path, tmp_path: Path,
                                                     example: Path) -> None:
    """README "evaluate your own model": each overlay, as its one command runs it, plans
    its model under every variant and the oracle under baseline only (nothing written)."""
    overlay = yaml.safe_load(example.read_text())
    config = validate(tmp_path, overlay)
    model = next(m for m in config["models"] if m["backend"] != "policy")
    assert model["backend"] == "openai" and "api_key" not in model["options"]
    relative = str(example.relative_to(ROOT))
    done = dry_run(project, "--cores", "8", "--configfile", relative)
    assert done.returncode == 0, done.stderr[-2000:]
    for variant in overlay["variants"]:
        assert f"results/trajectories/{model['name']}/{variant}/bfcl/" in done.stdout
    assert "results/trajectories/policy-oracle/baseline/bfcl/" in done.stdout
    assert "results/trajectories/policy-oracle/sri/" not in done.stdout
    assert not (project / "results").exists()  # a dry run: no job ran
