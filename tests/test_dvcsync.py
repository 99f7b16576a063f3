"""dvc.yaml generated from a throwaway Snakemake workflow, then run for real by DVC."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolcalib.pipeline.dvcsync import (
    DvcYamlStale,
    Job,
    main_dvc_sync,
    render_dvc_yaml,
    snakemake_jobs,
    sync,
)

SNAKEFILE = r"""
configfile: "config.yaml"

rule all:
    input:
        "results/metrics.json",

rule make:
    output:
        "data/{name}.txt",
    params:
        greeting=lambda wc: config["greeting"] + " " + wc.name,
    log:
        "logs/make/{name}.log",
    threads: 4
    shell:
        "printf '%s threads=%s\\n' {params.greeting:q} {threads} > {output} 2> {log}"

rule summarize:
    input:
        expand("data/{name}.txt", name=config["names"]),
    output:
        metrics="results/metrics.json",
        table="results/counts.csv",
    log:
        "logs/summarize.log",
    shell:
        "cat {input} | wc -c | sort > {output.table} 2> {log}"
        " && printf '{{\"n\": %d}}\\n' $(cat {input} | wc -l) > {output.metrics}"
"""
CONFIG = 'greeting: "hello {world}"\nnames: [a, b.c]\n'
OUTPUTS = ["data/a.txt", "data/b.c.txt", "results/counts.csv", "results/metrics.json"]
RENDER = {"metrics": ["results/*.json"], "plots": ["results/*.csv"], "uncached": []}


def make_workflow(root: Path) -> Path:
    root.mkdir()
    (root / "Snakefile").write_text(SNAKEFILE)
    (root / "config.yaml").write_text(CONFIG)
    return root


def generate(root: Path) -> str:
    # cores=2 as `snakemake --cores 2` below: `{threads}` resolves to min(threads, cores)
    jobs = snakemake_jobs(root, Path("Snakefile"), [Path("config.yaml")], {}, None, cores=2)
    return render_dvc_yaml(jobs, **RENDER)


def run(root: Path, *cmd: str) -> str:
    env = {**os.environ, "SHELL": "/bin/sh"}  # DVC runs cmd with $SHELL: prove POSIX sh is enough
    proc = subprocess.run(
        [sys.executable, "-m", *cmd], cwd=root, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def dvc_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    run(root, "dvc", "init", "-q")
    run(root, "dvc", "config", "core.analytics", "false")
    run(root, "dvc", "config", "core.autostage", "false")


def test_jobs_and_stages(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    root = make_workflow(tmp_path / "wf")
    cwd = Path.cwd()
    jobs = snakemake_jobs(root, Path("Snakefile"), [Path("config.yaml")], {}, None, cores=2)
    assert capfd.readouterr().out == ""
    assert Path.cwd() == cwd
    make_a = next(j for j in jobs if j.wildcards == {"name": "a"})
    assert make_a.cmd == (
        "set -euo pipefail; printf '%s threads=%s\\n' 'hello {world} a' 2 > data/a.txt"
        " 2> logs/make/a.log"
    )
    assert make_a.params == {"greeting": "hello {world} a"}
    assert make_a.log == ("logs/make/a.log",)

    stages = yaml.safe_load(render_dvc_yaml(jobs, **RENDER))["stages"]
    assert list(stages) == ["make--a", "make--b_c", "summarize"]
    assert stages["make--a"] == {
        "cmd": "mkdir -p data logs/make && bash -c 'set -euo pipefail; printf '\"'\"'%s"
        " threads=%s\\n'\"'\"' '\"'\"'hello {world} a'\"'\"' 2 > data/a.txt 2> logs/make/a.log'",
        "outs": ["data/a.txt"],
    }
    assert stages["summarize"]["deps"] == ["data/a.txt", "data/b.c.txt"]
    assert stages["summarize"]["metrics"] == [{"results/metrics.json": {"cache": False}}]
    assert stages["summarize"]["plots"] == ["results/counts.csv"]
    assert "outs" not in stages["summarize"]  # logs are not outs

    overridden = snakemake_jobs(
        root, Path("Snakefile"), [Path("config.yaml")], {"names": ["z"]}, ["data/a.txt"]
    )
    assert [(j.rule, j.wildcards) for j in overridden] == [("make", {"name": "a"})]


def test_render_rejects_what_dvc_would_misrun() -> None:
    job = Job("r", {"w": "x/y"}, "bash", "echo hi > out", (), ("out",))
    assert "r--x_y:" in render_dvc_yaml([job], metrics=["out"], uncached=["out"])
    with pytest.raises(ValueError, match="multi-line"):
        render_dvc_yaml([Job("r", {}, "bash", "echo a\necho b", (), ())])
    with pytest.raises(ValueError, match="interpolate"):
        render_dvc_yaml([Job("r", {}, "bash", "echo ${HOME}", (), ())])
    with pytest.raises(ValueError, match="two jobs"):
        render_dvc_yaml([job, Job("r", {"w": "x.y"}, "bash", "true", (), ())])


def test_sync_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_workflow(tmp_path / "wf")
    args = {"snakefile": Path("Snakefile"), "configfiles": [Path("config.yaml")], **RENDER}
    with pytest.raises(DvcYamlStale, match=r"\+\+\+ dvc.yaml \(generated\)"):
        sync(root, check=True, **args)
    assert sync(root, **args) is False
    assert sync(root, check=True, **args) is True
    argv = ["--check", "--repo-root", str(root), "--snakefile", "Snakefile"]
    # the CLI's default metrics/plots patterns differ from RENDER's
    assert main_dvc_sync([*argv, "--configfile", "config.yaml"]) == 1
    assert "stale" in capsys.readouterr().err


def test_dvc_repro_matches_snakemake(tmp_path: Path) -> None:
    via_dvc, via_snakemake = make_workflow(tmp_path / "dvc"), make_workflow(tmp_path / "smk")
    text = generate(via_dvc)
    for root in (via_dvc, via_snakemake):
        (root / "dvc.yaml").write_text(text)
        dvc_init(root)

    run(via_dvc, "dvc", "repro")
    assert "up to date" in run(via_dvc, "dvc", "status")
    assert generate(via_dvc) == text  # independent of what exists on disk
    # DVC -> Snakemake: record Snakemake's metadata for outputs DVC made (not just mtimes)
    run(via_dvc, "snakemake", "--touch", "--forceall", "--cores", "1")
    dry = run(via_dvc, "snakemake", "-n")
    assert "Nothing to be done" in dry and "missing provenance" not in dry

    run(via_snakemake, "snakemake", "--cores", "2")
    for out in OUTPUTS:
        assert (via_dvc / out).read_bytes() == (via_snakemake / out).read_bytes(), out
    # Snakemake -> DVC: record hashes without rerunning; same lock as `dvc repro` wrote
    run(via_snakemake, "dvc", "commit", "--force")
    assert "up to date" in run(via_snakemake, "dvc", "status")
    lock = (via_dvc / "dvc.lock").read_text()
    assert (via_snakemake / "dvc.lock").read_text() == lock


def test_sync_drops_the_lock_stages_dvc_yaml_no_longer_has(tmp_path: Path) -> None:
    root = make_workflow(tmp_path / "wf")
    args = {"snakefile": Path("Snakefile"), "configfiles": [Path("config.yaml")], **RENDER}
    sync(root, **args)
    kept = "\n".join(f"  {name}:\n    cmd: x\n    outs:\n    - path: {name}.txt"
                     for name in yaml.safe_load((root / "dvc.yaml").read_text())["stages"])
    lock = f"schema: '2.0'\nstages:\n{kept}\n  gone--a:\n    cmd: old\n    deps:\n    - path: a\n"
    (root / "dvc.lock").write_text(lock)
    with pytest.raises(DvcYamlStale, match="1 stage\\(s\\) dvc.yaml does not have .*: gone--a"):
        sync(root, check=True, **args)
    assert sync(root, **args) is False
    assert (root / "dvc.lock").read_text() == f"schema: '2.0'\nstages:\n{kept}\n"
    assert sync(root, check=True, **args) is True
