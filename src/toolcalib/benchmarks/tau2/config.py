"""The `benchmarks.tau2` config section: the pinned τ² release, the domains, which tasks are
`ask` gold, the simulated user and τ²'s limits (the config schema is generated from this
model)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolcalib.benchmarks.tau2.gold import ASK_GOLD, DEFAULT_ASK_GOLD
from toolcalib.benchmarks.tau2.release import DOMAINS
from toolcalib.config import ReleaseConfig

LOOP_OPTIONS = ("user", "max_steps", "max_errors", "user_params")
"""The fields the agent-user loop reads (`generate --benchmark-options`)."""


class Tau2Config(ReleaseConfig):
    categories: list[Literal[DOMAINS]] = Field(  # type: ignore[valid-type]
        json_schema_extra={"uniqueItems": True})
    """The domains to run (none: τ² does not run, e.g. in an overlay about BFCL only)."""
    ask_gold: Literal[tuple(ASK_GOLD)] = DEFAULT_ASK_GOLD  # type: ignore[valid-type]
    """Which tasks are also `ask` gold (`normalize --benchmark-options`; rule names in
    `gold.ASK_GOLD`): `published`, the method's table subset (the keyword candidates its
    audit keeps: airline 8, retail 28); `candidates`, every keyword candidate (airline 13,
    retail 28); `strict`, the candidates its audit labels `valid` (airline 6, retail 13)."""
    user: str = "reference"
    """Who plays the user: `reference` (the deterministic reference user), or the name of a
    `models` entry (any backend; its answers go through the response store)."""
    user_params: dict[str, float | int | str] = Field(default_factory=dict)
    """Generation parameters of the user's requests (τ²: temperature 0)."""
    max_steps: int = Field(default=200, ge=2)
    """Messages per episode (agent, user and tool results), as τ² counts them."""
    max_errors: int = Field(default=10, ge=1)
    """Tool errors per episode before it ends as `too_many_errors`."""
