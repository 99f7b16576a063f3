"""A folder output gets the same hash in dvc.lock whichever tool built it (issue 13, item 5).

Snakemake leaves an empty `.snakemake_timestamp` in every `directory()` output it writes or
touches (its mtime carrier); `dvc repro` does not. The project's `.dvcignore` makes DVC skip it,
so both builds, and a DVC build touched by Snakemake afterwards, record one hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from toolcalib.pipeline.dvcsync import render_dvc_yaml, snakemake_jobs
from toolcalib.provenance.lock import SNAKEMAKE_MARKER, md5_dir

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "results/folder"
SNAKEFILE = r"""
rule all:
    input:
        "results/summary.txt",

rule folder:
    output:
        directory("results/folder"),
    shell:
        "mkdir -p {output}/sub && printf 'a\\n' > {output}/a.txt"
        " && printf 'b\\n' > {output}/sub/b.txt"

rule summary:
    input:
        "results/folder",
    output:
        "results/summary.txt",
    shell:
        "cat {input}/a.txt {input}/sub/b.txt > {output}"
"""


def run(root: Path, *cmd: str) -> str:
    env = {**os.environ, "SHELL": "/bin/sh", "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run([sys.executable, "-m", *cmd], cwd=root, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def make_repo(root: Path, dvc_yaml: str | None = None) -> str:
    """A git+DVC repo with the Snakefile, the project's own `.dvcignore` and `dvc.yaml`."""
    root.mkdir()
    (root / "Snakefile").write_text(SNAKEFILE)
    if dvc_yaml is None:
        dvc_yaml = render_dvc_yaml(snakemake_jobs(root, Path("Snakefile"), cores=1))
    (root / "dvc.yaml").write_text(dvc_yaml)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    run(root, "dvc", "init", "-q")
    shutil.copyfile(ROOT / ".dvcignore", root / ".dvcignore")  # not DVC's default one
    return dvc_yaml


def folder_entries(root: Path) -> list[dict]:
    """Every dvc.lock entry (out of `folder`, dep of `summary`) recording the folder."""
    stages = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    return [entry for stage in stages.values() for kind in ("deps", "outs")
            for entry in stage.get(kind, []) if entry["path"] == FOLDER]


def test_folder_hash_is_the_same_from_snakemake_and_dvc(tmp_path: Path) -> None:
    via_smk, via_dvc = tmp_path / "smk", tmp_path / "dvc"
    make_repo(via_dvc, make_repo(via_smk))

    run(via_smk, "snakemake", "--cores", "1")
    assert (via_smk / FOLDER / SNAKEMAKE_MARKER).is_file()  # what this test is about
    run(via_smk, "dvc", "commit", "--force")
    assert "up to date" in run(via_smk, "dvc", "status")

    run(via_dvc, "dvc", "repro")
    assert not (via_dvc / FOLDER / SNAKEMAKE_MARKER).exists()
    lock = (via_dvc / "dvc.lock").read_text()
    # DVC -> Snakemake: `--touch` writes the marker into the folder DVC built
    run(via_dvc, "snakemake", "--touch", "--forceall", "--cores", "1")
    assert (via_dvc / FOLDER / SNAKEMAKE_MARKER).is_file()
    assert "up to date" in run(via_dvc, "dvc", "status")
    assert (via_dvc / "dvc.lock").read_text() == lock

    entries = folder_entries(via_dvc)
    assert len(entries) == 2 and all(e["nfiles"] == 2 for e in entries), entries
    assert folder_entries(via_smk) == entries
    assert (via_smk / "dvc.lock").read_text() == lock
    # `toolcalib audit` hashes folders as DVC does, marker or not
    for root in (via_smk, via_dvc):
        assert md5_dir(root / FOLDER) == entries[0]["md5"]
