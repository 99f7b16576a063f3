"""The default run's published-run part, built by Snakemake from the committed default config in
a fresh project: the four shipped τ² results files imported, their gold taken, classified and
scored, and one shipped BFCL run (gpt-oss-120b on vLLM main, five categories and the absent
one) imported and scored on the release's gold, give the bytes the committed `dvc.lock`
records, stage by stage (the slow tier runs the default run's published runs; the repro tier
rebuilds all of it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.workflow_build import ROOT, place_release, sh, tiny_project
from toolcalib.provenance.lock import md5_file, read_lock

DEFAULT = "config/config.yaml"
STAGES = ("import_run--", "gold_published--", "evaluate_tau2--", "evaluate_bfcl--",
          "normalize--tau2--", "gold--tau2--", "normalize--bfcl--", "gold--bfcl--")
BFCL_RUN = "vllm-main.openai_gpt-oss-120b"
"""One of the shipped BFCL runs (the entry `vllm-main`, expanded per model folder)."""


def _published_models() -> list[str]:
    """The default config's τ² runs, and one of its BFCL runs."""
    config = yaml.safe_load((ROOT / DEFAULT).read_text(encoding="utf-8"))
    return [m["name"] for m in config["models"]
            if m["backend"] == "replay" and "tau2" in (m.get("benchmarks") or {})] + [BFCL_RUN]


def _committed_outputs(models: list[str]) -> dict[str, str]:
    """path -> md5 of every output the committed lock records for the published models' stages
    (import, gold, evaluate) and the τ² cases and gold they are read against."""
    lock = read_lock(ROOT)
    chosen = {name: stage for name, stage in lock.items() if name.startswith(STAGES)
              and (name.startswith(STAGES[4:])
                   or any(f"--{m.replace('.', '_')}--" in name for m in models))}
    return {out["path"]: out["md5"] for stage in chosen.values() for out in stage["outs"]}


@pytest.mark.slow
def test_the_published_runs_give_the_committed_bytes(tmp_path: Path, tau2_wheel: Path,
                                                     bfcl_wheel: Path) -> None:
    models = _published_models()
    committed = _committed_outputs(models)
    assert len(models) == 4 and len(committed) >= 60, (models, len(committed))
    assert any(path.endswith(f"{BFCL_RUN}/bfcl/multi_turn_long_context.recorded.json")
               for path in committed)
    project = tiny_project(tmp_path / "project", extra=("data",))
    place_release(project, tau2_wheel, "tau2", DEFAULT)
    place_release(project, bfcl_wheel, "bfcl", DEFAULT)
    targets = [f"results/runs/{m}/baseline/{'bfcl' if m == BFCL_RUN else 'tau2'}/per_case.jsonl"
               for m in models]
    sh("snakemake", *targets, "--cores", "2", "--configfile", DEFAULT, "--quiet", cwd=project)
    built = {path: md5_file(project / path) for path in committed}
    differ = sorted(path for path in committed if built[path] != committed[path])
    assert not differ, f"{len(differ)} of {len(committed)} outputs differ from dvc.lock: {differ}"
