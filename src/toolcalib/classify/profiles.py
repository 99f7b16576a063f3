"""The registry of classifier profiles, by name."""

from __future__ import annotations

import importlib
from functools import cache

from toolcalib.classify.base import Profile

PROFILES: dict[str, str] = {
    "paper": "toolcalib.classify.paper:PaperProfile",
    "default": "toolcalib.classify.default:DefaultProfile",
}
"""Profile name -> its class, imported when asked for (a stage loads only the profile it runs;
the workflow declares every profile's module and data among a classifying job's sources)."""


@cache
def get_profile(name: str) -> Profile:
    """The profile called `name`; an unknown name is an error that lists the known ones."""
    try:
        module, factory = PROFILES[name].split(":")
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown classifier profile {name!r}; known profiles: {known}") from None
    return getattr(importlib.import_module(module), factory)()
