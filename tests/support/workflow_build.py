"""The tiny config (tests/data/tiny.yaml) as a project of its own: the real Snakefile, workflow,
config and code copied into a fresh git repository, and (once per pytest run, see the
`tiny_build` fixture in tests/conftest.py) run by Snakemake and recorded by DVC.

The build is shared by every test that reads it: a test that changes anything in it works on
`clone(build, ...)` instead."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = "tests/data/tiny.yaml"
BFCL_FILE = "bfcl_eval-2026.3.23-py3-none-any.whl"
GITIGNORE = ".snakemake/\nresults/logs/\n__pycache__/\n.toolcalib/\n"


def sh(*args: str, cwd: Path, env: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def artifacts(root: Path) -> dict[str, str]:
    """sha256 of every pipeline artifact (logs excluded: they hold timings)."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((root / "results").rglob("*"))
        if path.is_file() and "logs" not in path.parts and path.name != ".gitignore"
    }


def tiny_project(root: Path, extra: tuple[str, ...] = ()) -> Path:
    """The workflow and the code (and the folders `extra` names, such as `data`) in a fresh git
    repository at `root` (committed, nothing run)."""
    root.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("Snakefile", "workflow", "config", "src", *extra):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            shutil.copy2(source, root / name)
    shutil.copytree(ROOT / "tests" / "data", root / "tests" / "data", ignore=ignore)
    (root / ".gitignore").write_text(GITIGNORE)
    sh("git", "init", "-q", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "tiny project", cwd=root)
    return root


def place_release(root: Path, wheel: Path, benchmark: str = "bfcl",
                  configfile: str = TINY) -> None:
    """A verified release (`wheel`, BFCL's by default) put in place in `root` (a
    `tiny_project`) and recorded as the download job's output (`--touch`: newer than the code,
    with Snakemake's metadata, so no later run downloads it again)."""
    raw = root / "results" / "raw" / benchmark
    raw.mkdir(parents=True)
    shutil.copy(wheel, raw / wheel.name)
    sh("snakemake", f"results/raw/{benchmark}/{wheel.name}", "--cores", "1", "--configfile",
       configfile, "--touch", "--forceall", "--quiet", cwd=root)


def build_tiny(root: Path, wheel: Path) -> Path:
    """The tiny config run by Snakemake in `root` (a `tiny_project`), then `dvc commit`ted: a
    build both tools see as up to date.

    The release is put in place first (`place_release`); the download job itself runs in the
    workflow test's `dvc repro` from clean."""
    place_release(root, wheel)
    sh("snakemake", "--cores", "2", "--configfile", TINY, "--quiet", cwd=root)
    sh("toolcalib", "dvc-sync", "--configfile", TINY, cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    sh("dvc", "config", "core.analytics", "false", cwd=root)
    # --no-relink: the outputs stay the files Snakemake wrote (a relink rewrites them, newer
    # than what they were made from, and Snakemake would rerun their consumers)
    sh("dvc", "commit", "-f", "-q", "--no-relink", cwd=root)
    return root


def clone(build: Path, target: Path) -> Path:
    """A private copy of a build (git, Snakemake and DVC state, mtimes kept) to change."""
    shutil.copytree(build, target, symlinks=True)
    return target
