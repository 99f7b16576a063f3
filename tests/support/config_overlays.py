"""Overlays merged on a config as Snakemake merges them, then checked as the Snakefile checks
(`config_schema.check_config`, which also expands many-model entries): the config tests'
shared helpers."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from snakemake.utils import update_config

from toolcalib.pipeline.config_schema import ConfigError, check_config, workflow_layers

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = "config/config.yaml"


def validate(tmp_path: Path, overlay: dict[str, Any], cli: dict[str, Any] | None = None,
             base: str = DEFAULT) -> dict[str, Any]:
    """Merge `overlay` (written to a file) and `--config` values on `base` as Snakemake does,
    then validate with the layers `workflow_layers` reads off the workflow; the merged config.
    An overlay replacing the default config's `models` clears its `pairs` (they name them)."""
    if "models" in overlay and base == DEFAULT:
        overlay = {"pairs": [], **overlay}
    overlay_file = tmp_path / "overlay.yaml"
    overlay_file.write_text(yaml.safe_dump(overlay))
    workflow = SimpleNamespace(configfiles=[overlay_file, ROOT / base],
                               overwrite_configfiles=[overlay_file],
                               config_settings=SimpleNamespace(config=cli or {}))
    config = yaml.safe_load((ROOT / base).read_text())
    update_config(config, copy.deepcopy(overlay))
    update_config(config, copy.deepcopy(cli or {}))
    check_config(config, workflow_layers(workflow))
    return config


def message(tmp_path: Path, overlay: dict[str, Any], cli: dict[str, Any] | None = None) -> str:
    """The one-line error `validate` raises, the overlay's path written OVERLAY."""
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, overlay, cli)
    text = str(caught.value)
    assert "\n" not in text
    return text.replace(str(tmp_path / "overlay.yaml"), "OVERLAY")
