"""Fetch a pinned package release by name with the package manager and verify its sha256."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from toolcalib.jsonio import sha256_file


class FetchError(RuntimeError):
    """The release could not be fetched or is not the pinned one; no output was left."""


def download(requirement: str, dest: str | Path) -> Path:
    """Download the pinned `requirement` (no dependencies, binary only) into the empty folder
    `dest` with the package manager; return the one file it fetched (not yet verified)."""
    if "==" not in requirement:
        raise FetchError(f"requirement '{requirement}' is not pinned with '=='")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--quiet", "-d", str(dest), requirement]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise FetchError(f"could not fetch {requirement}: pip exited {done.returncode}: "
                         f"{done.stderr.strip()[-2000:]}")
    files = sorted(Path(dest).iterdir())
    if len(files) != 1:
        raise FetchError(f"expected one file for {requirement}, got {[f.name for f in files]}")
    return files[0]


def fetch_package(requirement: str, sha256: str, out: str | Path) -> Path:
    """Download `requirement` (e.g. 'bfcl-eval==2026.3.23') without its dependencies into a
    scratch folder, check the single file's sha256, then move it to `out` atomically."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # the scratch folder beside `out`: the rename is atomic, and processes fetching the same
    # file at once each rename their own verified copy (the last one stays)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as scratch:
        fetched = download(requirement, scratch)
        actual = sha256_file(fetched)
        if actual != sha256:
            raise FetchError(f"sha256 mismatch for {requirement} ({fetched.name}): "
                             f"expected {sha256}, got {actual}; nothing was kept")
        if fetched.name != out.name:
            raise FetchError(f"{requirement} fetched as {fetched.name}, config expects {out.name}")
        fetched.replace(out)
    return out
