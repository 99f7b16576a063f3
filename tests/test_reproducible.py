"""Reproducibility: two clean clones of a small overlay build identical artifacts (slow tier),
and the default run built from scratch equals the committed dvc.lock (`repro` tier: run by
.ci/run after the main tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
OVERLAY = "tests/data/repro.yaml"
pytestmark = pytest.mark.slow


def sh(*args: str, cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def clean_clone(source: Path, target: Path) -> Path:
    sh("git", "clone", "-q", str(source), str(target), cwd=source.parent)
    return target


def recorded(lock_file: Path) -> dict[str, str]:
    """Every output's hash in a dvc.lock."""
    lock = yaml.safe_load(lock_file.read_text())
    return {out["path"]: out.get("md5", "") for stage in lock["stages"].values()
            for out in stage.get("outs", [])}


def build(clone: Path) -> dict[str, str]:
    """Snakemake from clean, then DVC records every output's hash."""
    sh("toolcalib", "dvc-sync", "--configfile", OVERLAY, cwd=clone)
    sh("snakemake", "--cores", "2", "--configfile", OVERLAY, "--quiet", cwd=clone)
    sh("dvc", "commit", "--force", "--quiet", cwd=clone)
    return recorded(clone / "dvc.lock")


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository holding the working tree as it is now (committed or not)."""
    origin = tmp_path_factory.mktemp("origin")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file() and not name.startswith("results/"):
            (origin / name).parent.mkdir(parents=True, exist_ok=True)
            (origin / name).write_bytes((ROOT / name).read_bytes())
    sh("git", "init", "-q", cwd=origin)
    sh("git", "add", "-A", cwd=origin)
    sh("git", "commit", "-qm", "snapshot", cwd=origin)
    return origin


def test_two_clean_clones_produce_identical_artifacts(origin: Path, tmp_path: Path) -> None:
    first = build(clean_clone(origin, tmp_path / "one"))
    second = build(clean_clone(origin, tmp_path / "two"))
    assert len(first) > 50
    assert all(first.values()), "every output has a recorded hash"
    assert first == second


@pytest.mark.repro
def test_the_default_run_from_scratch_equals_the_committed_lock() -> None:
    """`toolcalib reproduce`: the committed HEAD built from scratch in a clean clone (its own
    empty response store and prefix folder) gives every output hash of the committed dvc.lock
    (the manifest by its content). It fails on any difference, on any CPU, and explains each."""
    done = subprocess.run(["toolcalib", "reproduce", "--cores", "8"], cwd=ROOT,
                          capture_output=True, text=True)
    print(done.stdout)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}"
    assert "reproduce: OK" in done.stdout
