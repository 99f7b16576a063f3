"""The registry of classifier profiles, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from toolcalib.classify.base import Profile
from toolcalib.classify.default import DefaultProfile
from toolcalib.classify.paper import PaperProfile

PROFILES: dict[str, Callable[[], Profile]] = {
    "paper": PaperProfile,
    "default": DefaultProfile,
}


@cache
def get_profile(name: str) -> Profile:
    """The profile called `name`; an unknown name is an error that lists the known ones."""
    try:
        factory = PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown classifier profile {name!r}; known profiles: {known}") from None
    return factory()
