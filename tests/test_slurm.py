"""The SLURM profile (workflow/profiles/slurm) on a real cluster: the tiny config submitted job
by job through snakemake-executor-plugin-slurm to a single-node cluster on 127.0.0.1
(tests/support/slurm_cluster.py) gives the bytes of the local build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.slurm_cluster import ACCOUNT
from tests.support.workflow_build import TINY, artifacts, place_release, sh


@pytest.mark.slow
def test_the_tiny_config_through_slurm_gives_the_local_bytes(
        tiny_build: Path, slurm_cluster, bfcl_wheel: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"  # the build's commit (the manifest records it), no results
    sh("git", "clone", "-q", str(tiny_build), str(project), cwd=tmp_path)
    place_release(project, bfcl_wheel)
    env = slurm_cluster.env()
    # a bound: a plugin that never sees its jobs end (no accounting) waits forever
    done = sh("timeout", "900", "snakemake", "--profile", "workflow/profiles/slurm",
              "--configfile", TINY, "--default-resources", f"slurm_account={ACCOUNT}",
              "--slurm-init-seconds-before-status-checks", "1", cwd=project, env=env)
    assert "Nothing to be done" not in done.stderr

    local = artifacts(tiny_build)
    assert artifacts(project) == local

    # every job ran as a SLURM job of this one run, and the accounting database saw it end
    steps = re.findall(r"(\d+) of (\d+) steps \(100%\) done", done.stderr)
    assert steps and steps[-1][0] == steps[-1][1], done.stderr[-2000:]
    jobs = sh("sacct", "-a", "-X", "-n", "--parsable2", "-S", "now-1days",
              "--format=JobName,State,Account", cwd=project, env=env).stdout.splitlines()
    assert len(jobs) == int(steps[-1][1]) - 1  # `all`, the target rule, runs on the login node
    assert len({line.split("|")[0] for line in jobs}) == 1, jobs
    assert {tuple(line.split("|")[1:]) for line in jobs} == {("COMPLETED", ACCOUNT)}
