"""The `benchmarks.bfcl` config section: the pinned BFCL release and the categories to run
(the config schema is generated from this record)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from toolcalib.benchmarks.bfcl.normalize import CATEGORIES
from toolcalib.config import ReleaseConfig


class BfclConfig(ReleaseConfig, frozen=True, kw_only=True):
    categories: Annotated[list[Literal[CATEGORIES]],  # type: ignore[valid-type]
                          Meta(min_length=1, extra_json_schema={"uniqueItems": True})]
