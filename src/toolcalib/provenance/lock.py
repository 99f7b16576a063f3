"""`dvc.lock` and the files it records: the lock's stages, the md5 DVC records for a file, a
recorded version in DVC's cache, and the run manifest beside them. What `audit` and
`reproduce` both read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

LOCK = "dvc.lock"
MANIFEST = "results/manifest.json"
TRAJECTORIES = "results/trajectories/"
HINT = "run `dvc repro` or `snakemake --cores 8` first (or `dvc pull` for a recorded run)"
SNAKEMAKE_MARKER = ".snakemake_timestamp"
"""Snakemake's empty marker in its `directory()` outputs; `.dvcignore` makes DVC skip it."""


class ProvenanceError(Exception):
    """A missing input or an unknown cell, metric or case (exit status 2)."""


def require(root: Path, relative: str, what: str) -> Path:
    """`root / relative`, which must exist (else the error says what to run)."""
    path = root / relative
    if not path.exists():
        raise ProvenanceError(f"{relative} ({what}) is missing under {root}: {HINT}")
    return path


def read_lock(root: Path) -> dict[str, dict[str, Any]]:
    """The stages of `root`'s dvc.lock, by name."""
    path = root / LOCK
    if not path.is_file():
        raise ProvenanceError(
            f"{LOCK} (every stage's command and hashes) is missing under {root}: run "
            "`dvc repro`, or `snakemake --cores 8` then `dvc commit --force`, first"
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stages = (yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}).get("stages")
    return dict(stages or {})


def read_manifest(root: Path) -> dict[str, Any]:
    """`root`'s run manifest; empty when it has none."""
    path = root / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def is_trajectory(path: str, manifest: dict[str, Any]) -> bool:
    """Whether an output is a generate stage's trajectory file (the manifest digests it)."""
    return path in (manifest.get("trajectories") or {}) or path.startswith(TRAJECTORIES)


def md5_file(path: Path) -> str:
    """Plain md5 of the bytes, as DVC 3 records a file (`hash: md5`)."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def md5_dir(path: Path) -> str:
    """DVC's `.dir` hash: md5 of the JSON list of {md5, relpath} of every file, by relpath
    (Snakemake's marker left out, as DVC leaves it out)."""
    entries = sorted(
        ({"md5": md5_file(f), "relpath": f.relative_to(path).as_posix()}
         for f in path.rglob("*") if f.is_file() and f.name != SNAKEMAKE_MARKER),
        key=lambda entry: entry["relpath"],
    )
    data = json.dumps(entries, sort_keys=True).encode("utf-8")
    return hashlib.md5(data).hexdigest() + ".dir"


def dvc_md5(path: Path) -> str | None:
    """The md5 DVC would record for `path` now; None when it does not exist."""
    if path.is_dir():
        return md5_dir(path)
    return md5_file(path) if path.is_file() else None


def dvc_cached(root: Path, md5: str) -> Path | None:
    """The committed version of a file in the project's DVC cache, if it is there."""
    path = root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    return path if md5 and not md5.endswith(".dir") and path.is_file() else None
