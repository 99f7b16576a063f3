"""Stage: download a pinned release by package name and verify its sha256."""

from toolcalib.fetch import fetch_package
from toolcalib.stages import log


def run(requirement: str, sha256: str, out: str) -> None:
    fetch_package(requirement, sha256, out)
    log(f"fetched {requirement} -> {out} (sha256 verified)")
