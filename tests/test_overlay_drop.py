"""An overlay drops a benchmark with `benchmarks: {<name>: null}`: the run has no such benchmark
(its section removed before validation), the models' `benchmarks` maps naming it leave it out;
checked through `check_config` as the Snakefile runs it and through a real `snakemake -n`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.config_overlays import DEFAULT, ROOT, message, validate
from tests.support.workflow_build import tiny_project

SERVED = {"name": "served", "backend": "openai",
          "options": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}


def test_null_drops_the_benchmark_and_the_models_maps_leave_it_out(tmp_path: Path) -> None:
    default = yaml.safe_load((ROOT / DEFAULT).read_text())
    assert default["benchmarks"].keys() == {"bfcl", "tau2"}
    config = validate(tmp_path, {"benchmarks": {"tau2": None}})
    assert list(config["benchmarks"]) == ["bfcl"]
    maps = {m["name"]: m.get("benchmarks") for m in config["models"]}
    assert maps["smollm2-135m"] == {"bfcl": None}  # was {bfcl: null, tau2: [baseline]}
    assert maps["claude-sonnet-4-5"] == {}  # τ² only: runs nothing now
    assert maps["policy-oracle"] is None  # no map: every benchmark of the run
    # the other way round
    config = validate(tmp_path, {"benchmarks": {"bfcl": None}, "pairs": []})  # pairs: BFCL's
    assert list(config["benchmarks"]) == ["tau2"]
    assert {m["name"]: m.get("benchmarks") for m in config["models"]}["smollm2-135m"] == {
        "tau2": ["baseline"]}


def test_variants_only_the_dropped_benchmark_refused_are_fine_then(tmp_path: Path) -> None:
    """τ² does not run `sri`; without τ², a model under `sri` is a valid config."""
    overlay = {"models": [SERVED], "variants": ["baseline", "sri"]}
    assert "variant 'sri' does not run on benchmark 'tau2'" in message(tmp_path, overlay)
    validate(tmp_path, {**overlay, "benchmarks": {"tau2": None}})


@pytest.mark.parametrize(("overlay", "line"), [
    ({"benchmarks": {"tau2": None, "bfcl": None}},
     "OVERLAY: benchmarks: every benchmark is dropped (null: bfcl, tau2); a run needs at "
     "least one"),
    ({"models": [{**SERVED, "benchmarks": {"bfcl-v3": None}}]},
     "OVERLAY: models[0].benchmarks.bfcl-v3: unknown benchmark (this run's: bfcl, tau2)"),
    ({"benchmarks": {"tau2": None}, "models": [SERVED, {**SERVED, "name": "other"}],
      "pairs": [{"name": "p", "base": "served", "other": "tau-gone"}]},
     "OVERLAY: pairs[0].other: 'tau-gone' is not in 'models' (known: served, other)"),
], ids=["every-benchmark", "unknown-in-a-model-map", "pairs-still-checked"])
def test_what_stays_an_error(tmp_path: Path, overlay: dict[str, Any], line: str) -> None:
    assert message(tmp_path, overlay) == line


def test_a_pair_that_shared_only_the_dropped_benchmark_is_refused(tmp_path: Path) -> None:
    models = [{**SERVED, "benchmarks": {"tau2": None}},
              {**SERVED, "name": "other", "benchmarks": {"tau2": None}}]
    pairs = [{"name": "p", "base": "served", "other": "other"}]
    validate(tmp_path, {"models": models, "pairs": pairs})
    text = message(tmp_path, {"models": models, "pairs": pairs,
                              "benchmarks": {"tau2": None}})
    assert text == ("OVERLAY: pairs[0].other: 'other' shares no (variant, benchmark, "
                    "category) with base 'served' (it runs nothing; base runs nothing)")


def test_snakemake_dry_run_plans_no_job_of_the_dropped_benchmark(tmp_path: Path) -> None:
    root = tiny_project(tmp_path / "project")
    tiny = yaml.safe_load((ROOT / "tests/data/tiny.yaml").read_text())
    assert tiny["benchmarks"]["tau2"] == {"categories": []}  # today's workaround
    overlay = tmp_path / "no-tau2.yaml"
    overlay.write_text(yaml.safe_dump({"pairs": [], **tiny,
                                       "benchmarks": {**tiny["benchmarks"], "tau2": None}}))

    def plan(*configfiles: str) -> str:
        done = subprocess.run(["snakemake", "-n", "--nolock", "--configfile", *configfiles],
                              cwd=root, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    workaround, dropped = plan("tests/data/tiny.yaml"), plan(str(overlay))
    assert "results/raw/tau2/" in workaround  # no category, still its release fetched
    assert "results/raw/tau2/" not in dropped and "results/cases/tau2/" not in dropped
    assert "results/raw/bfcl/" in dropped
    assert "results/trajectories/policy-oracle/sri/bfcl/irrelevance.jsonl" in dropped
