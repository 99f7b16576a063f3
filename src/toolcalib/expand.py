"""A config's published-run entries that name a folder of many models, expanded into one model
entry each before the config is checked (a leaderboard of 100 models is one entry).

An entry with backend `replay` and option `model: '*'` becomes one entry per model folder its
benchmark's plugin finds under `path` (`Benchmark.published_models`), named
`<entry name>.<folder>`, with `model: <folder>` and every other field as the entry has it. The
entry must name its one benchmark (`benchmarks: {bfcl: [baseline]}`); with that benchmark
dropped from the run (its map left empty) the entry runs nothing and expands to no model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolcalib.backends.replay import ReplayOptions
from toolcalib.benchmarks import get_benchmark
from toolcalib.jsonio import InputError

EVERY_MODEL = "*"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""What a model folder's name may hold to name a model (the workflow's path-safe names)."""


def expand_models(models: Any) -> Any:
    """`models` with each many-model entry replaced by its models (anything else unchanged,
    malformed entries included: the config check reports those)."""
    if not isinstance(models, list):
        return models
    expanded: list[Any] = []
    for index, entry in enumerate(models):
        options = entry.get("options") if isinstance(entry, Mapping) else None
        if not isinstance(options, Mapping) or entry.get("backend") != "replay" \
                or options.get("model") != EVERY_MODEL:
            expanded.append(entry)
            continue
        expanded.extend(_entries(index, entry, options))
    return expanded


def _entries(index: int, entry: Mapping[str, Any],
             options: Mapping[str, Any]) -> list[dict[str, Any]]:
    where = f"models[{index}] ({entry.get('name')!r})"
    benchmarks = entry.get("benchmarks")
    if benchmarks == {}:  # its benchmark dropped from the run (`benchmarks: {bfcl: null}`)
        return []
    chosen = [name for name, variants in (benchmarks or {}).items() if variants is not None]
    if len(chosen) != 1:
        raise InputError(f"{where}: option model '*' needs 'benchmarks' to name the one "
                         f"benchmark of its results (got {chosen or 'none'})")
    try:
        folders = get_benchmark(chosen[0]).published_models(ReplayOptions(**options))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: field 'options': {exc}") from None
    if not folders:
        raise InputError(f"{where}: no model folder with results under {options.get('path')}")
    odd = [folder for folder in folders if not NAME.fullmatch(folder)]
    if odd:
        raise InputError(f"{where}: model folder {odd[0]!r} under {options.get('path')} cannot "
                         f"name a model (allowed: {NAME.pattern})")
    return [{**entry, "name": f"{entry['name']}.{folder}",
             "options": {**options, "model": folder}} for folder in folders]
