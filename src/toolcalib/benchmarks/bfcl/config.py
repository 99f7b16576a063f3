"""The `benchmarks.bfcl` config section: the pinned BFCL release and the categories to run
(the config schema is generated from this model; the plugin never loads pydantic, which
specs and config files alone use)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolcalib.benchmarks.bfcl.normalize import CATEGORIES
from toolcalib.config import ReleaseConfig


class BfclConfig(ReleaseConfig):
    categories: list[Literal[CATEGORIES]] = Field(  # type: ignore[valid-type]
        min_length=1, json_schema_extra={"uniqueItems": True})
