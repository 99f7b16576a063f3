"""Stage: the run manifest next to the metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolcalib.benchmarks import get_benchmark
from toolcalib.jsonio import write_json
from toolcalib.provenance.manifest import build_manifest
from toolcalib.stages import log


def run(config_json: str, inputs: Sequence[str], trajectories: Sequence[str], out: str) -> None:
    config = json.loads(config_json)
    versions = {name: get_benchmark(name).version for name in config.get("benchmarks", {})}
    manifest = build_manifest(config, [*inputs, *trajectories], trajectories,
                              benchmarks=versions)
    write_json(out, manifest)
    log(f"manifest of {len(manifest['inputs'])} inputs -> {out}")
