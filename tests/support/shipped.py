"""The published runs shipped in `data/published/<benchmark>/` checked against their
`PROVENANCE.yaml` (each file's path and sha256): what the corpus scripts that read them share."""

from __future__ import annotations

from pathlib import Path

import yaml


def shipped_sha256(folder: Path) -> dict[str, str]:
    """Shipped file (relative to `folder`) -> its sha256, as `folder/PROVENANCE.yaml` lists it."""
    listed = yaml.safe_load((folder / "PROVENANCE.yaml").read_text("utf-8"))["files"]
    return {entry["path"]: entry["sha256"] for entry in listed}


def check_sha256(name: str, digest: str, listed: str | None) -> None:
    """Stop (one line) where a shipped file's sha256 is not the one its provenance lists."""
    if digest != listed:
        raise SystemExit(f"{name}: sha256 {digest}, PROVENANCE.yaml says {listed}")
