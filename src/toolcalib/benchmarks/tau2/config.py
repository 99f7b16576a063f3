"""The `benchmarks.tau2` config section: the pinned τ² release, the domains, which tasks are
`ask` gold, the simulated user and τ²'s limits (the config schema is generated from this
record)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from toolcalib.benchmarks.tau2.gold import Tau2Cases
from toolcalib.benchmarks.tau2.loop import Tau2Loop
from toolcalib.benchmarks.tau2.release import DOMAINS
from toolcalib.config import ReleaseConfig, with_settings


class Tau2Section(ReleaseConfig, frozen=True, kw_only=True):
    categories: Annotated[list[Literal[DOMAINS]],  # type: ignore[valid-type]
                          Meta(extra_json_schema={"uniqueItems": True})]
    """The domains to run (none: τ² does not run, e.g. in an overlay about BFCL only)."""


Tau2Config = with_settings("Tau2Config", Tau2Section, Tau2Cases, Tau2Loop)
"""The section: the release, its domains, and the fields of the plugin's settings (`ask_gold`:
`Tau2Cases`; the user and the limits: `Tau2Loop`)."""
