"""The config's `pairs` (model-vs-model comparisons) are checked with the config: each bad entry
is one line naming the config file, the field and what is wrong; a good one reaches the
aggregate stage as `--pairs` (a real `snakemake -n`)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.config_overlays import message, validate
from tests.support.workflow_build import tiny_project


def served(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "backend": "openai",
            "options": {"base_url": "http://127.0.0.1:9/v1", "model": name}, **extra}


MODELS = [served("vllm-main.gpt-oss"), served("vllm-harmony.gpt-oss"),
          served("tau-only", benchmarks={"tau2": None}),
          served("bfcl-only", benchmarks={"bfcl": None})]
GOOD = {"name": "builds", "base": "vllm-main.gpt-oss", "other": "vllm-harmony.gpt-oss"}


def test_a_pair_of_two_models_sharing_cells_is_accepted(tmp_path: Path) -> None:
    config = validate(tmp_path, {"models": MODELS, "pairs": [GOOD]})
    assert config["pairs"] == [GOOD]


BROKEN = [  # (id, pairs, the whole message)
    ("unknown-model", [{**GOOD, "other": "vllm-harmony.gpt-os"}],
     "OVERLAY: pairs[0].other: 'vllm-harmony.gpt-os' is not in 'models' (did you mean "
     "'vllm-harmony.gpt-oss'? known: vllm-main.gpt-oss, vllm-harmony.gpt-oss, tau-only, "
     "bfcl-only)"),
    ("unknown-base", [{**GOOD, "base": "nobody"}],
     "OVERLAY: pairs[0].base: 'nobody' is not in 'models' (known: vllm-main.gpt-oss, "
     "vllm-harmony.gpt-oss, tau-only, bfcl-only)"),
    ("same-model", [{**GOOD, "other": GOOD["base"]}],
     "OVERLAY: pairs[0].other: 'vllm-main.gpt-oss' is also the pair's base (a pair compares "
     "two models)"),
    ("name-twice", [GOOD, {**GOOD, "base": "bfcl-only"}],
     "OVERLAY: pairs[1].name: 'builds' is also pairs[0].name (pair names must differ)"),
    ("nothing-shared", [{"name": "x", "base": "tau-only", "other": "bfcl-only"}],
     "OVERLAY: pairs[0].other: 'bfcl-only' shares no (variant, benchmark, category) with base "
     "'tau-only' (it runs baseline/bfcl/irrelevance, baseline/bfcl/live_irrelevance, "
     "baseline/bfcl/multi_turn_base, baseline/bfcl/multi_turn_long_context, ... (12 in all); "
     "base runs baseline/tau2/airline, baseline/tau2/retail, no-tools-visible/tau2/airline, "
     "no-tools-visible/tau2/retail)"),
    ("missing-field", [{"name": "x", "base": "tau-only"}],
     "OVERLAY: pairs[0].other: missing (required)"),
    ("unknown-field", [{**GOOD, "variant": "baseline"}],
     "OVERLAY: pairs[0].variant: unknown key (allowed: base, name, other)"),
    ("name-not-a-path", [{**GOOD, "name": "a/b"}],
     "OVERLAY: pairs[0].name: 'a/b' does not match '^[A-Za-z0-9][A-Za-z0-9_.-]*$'"),
    ("not-a-list", {"builds": GOOD},
     "OVERLAY: pairs: expected array, got {'builds': {'name': 'builds', 'base': "
     "'vllm-main.gpt-oss'..."),
]


@pytest.mark.parametrize(("pairs", "line"), [case[1:] for case in BROKEN],
                         ids=[case[0] for case in BROKEN])
def test_a_bad_pair_is_one_line_naming_its_field(tmp_path: Path, pairs: Any, line: str) -> None:
    assert message(tmp_path, {"models": MODELS, "pairs": pairs}) == line


def test_a_category_a_model_runs_no_case_of_is_not_shared(tmp_path: Path) -> None:
    """`limit: 0` for a category: no case, no cell to pair."""
    zero = {c: 0 for c in ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
                           "multi_turn_miss_param", "irrelevance", "live_irrelevance")}
    models = [MODELS[3], served("none", limit=zero, benchmarks={"bfcl": None})]
    text = message(tmp_path, {"models": models,
                              "pairs": [{"name": "x", "base": "bfcl-only", "other": "none"}]})
    assert text.startswith("OVERLAY: pairs[0].other: 'none' shares no (variant, benchmark, "
                           "category) with base 'bfcl-only' (it runs nothing; "), text


def test_pairs_reach_the_aggregate_command_in_a_dry_run(tmp_path: Path) -> None:
    root = tiny_project(tmp_path / "project")
    pairs = [{"name": "policies", "base": "policy-oracle", "other": "policy-never_call"}]
    overlay = tmp_path / "pairs.yaml"
    overlay.write_text(yaml.safe_dump({"pairs": pairs}))
    done = subprocess.run(["snakemake", "-n", "--nolock", "--configfile", "tests/data/tiny.yaml",
                           str(overlay), "-p", "results/metrics/pairs.csv"],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    argument = shlex.quote(json.dumps(pairs, sort_keys=True, separators=(",", ":")))
    assert f"--pairs {argument} --out-dir results/metrics" in done.stdout
