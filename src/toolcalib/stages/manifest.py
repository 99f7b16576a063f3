"""Stage: the run manifest next to the metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolcalib.jsonio import write_json
from toolcalib.provenance.manifest import build_manifest
from toolcalib.stages import log


def run(config_json: str, inputs: Sequence[str], trajectories: Sequence[str], out: str) -> None:
    manifest = build_manifest(json.loads(config_json), [*inputs, *trajectories], trajectories)
    write_json(out, manifest)
    log(f"manifest of {len(manifest['inputs'])} inputs -> {out}")
