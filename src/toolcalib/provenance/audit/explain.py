"""Why an artifact no longer matches dvc.lock: a trajectory record by record (or from the
manifest's digests of it), any other file by whether DVC's cache holds its recorded version;
and the machine that recorded the run next to this one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolcalib.provenance.lock import dvc_cached, is_trajectory
from toolcalib.provenance.manifest import machine
from toolcalib.provenance.trajdigest import explain_trajectory


def explain(root: Path, path: str, recorded: str, manifest: dict[str, Any]) -> list[str]:
    """Why a file no longer matches its recorded md5: record by record for a trajectory whose
    recorded version is in DVC's cache, else from the manifest's digests of it."""
    committed = dvc_cached(root, recorded)
    if is_trajectory(path, manifest):
        return explain_trajectory(path, manifest, root / path, committed)
    if committed is None:
        return ["the recorded version is not in DVC's cache (`dvc pull` fetches it, "
                "`dvc checkout` restores it)"]
    return [f"the recorded version is in DVC's cache ({committed.relative_to(root)}): "
            "`dvc checkout` restores it"]


def machine_lines(recorded: dict[str, Any]) -> list[str]:
    """The committed manifest's machine next to this one's, when they differ."""
    here = machine()
    if {k: recorded.get(k) for k in here} == here:
        return [f"recorded and built on the same machine kind ({_machine_text(here)})"]
    return [f"recorded on {_machine_text(recorded)}, here {_machine_text(here)}"]


def _machine_text(facts: dict[str, Any]) -> str:
    return (f"{facts.get('cpu_capability') or 'unknown capability'} "
            f"({facts.get('processor') or 'unknown CPU'}, {facts.get('cpu_count')} CPUs)")
