"""The registry of classifier profiles, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from toolcalib.classify.base import Profile
from toolcalib.registry import Registry

PROFILES: Registry[Callable[[], Profile]] = Registry("classifier profile", {
    "paper": "toolcalib.classify.paper:PaperProfile",
    "default": "toolcalib.classify.default:DefaultProfile",
})
"""Profile name -> its class, imported when asked for (a stage loads only the profile it runs;
the workflow declares every profile's module and data among a classifying job's sources)."""


@cache
def get_profile(name: str) -> Profile:
    """The profile called `name`; an unknown name is an error that lists the known ones."""
    return PROFILES.load(name)()
