"""Stage: download a pinned release by package name and verify its sha256."""

from typing import Annotated

from toolcalib.fetch import fetch_package
from toolcalib.stages import Arg, log


def run(requirement: Annotated[str, Arg("e.g. bfcl-eval==2026.3.23")], sha256: str,
        out: str) -> None:
    fetch_package(requirement, sha256, out)
    log(f"fetched {requirement} -> {out} (sha256 verified)")
