"""The registry of classifier profiles, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from toolcalib.classify.base import NO_CONTEXT, Profile
from toolcalib.records import ActionClass, AsksUser, Emission, ReadAlone
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


def read_alone(name: str) -> ReadAlone:
    """Profile `name`'s class of an emission read by itself (`NO_CONTEXT`), the profile made
    at its first use: what a stage hands a benchmark that reads an agent's text."""

    def read(emission: Emission) -> ActionClass | None:
        return get_profile(name).classify(emission, NO_CONTEXT).action

    return read


def asks_user(name: str) -> AsksUser:
    """The rule by which profile `name` reads an emission by itself (`NO_CONTEXT`) as `ask`,
    None where it reads another class, the profile made at its first use: what the generate
    stage hands the `sri-gate` probe."""

    def asks(emission: Emission) -> str | None:
        action = get_profile(name).classify(emission, NO_CONTEXT)
        return action.rule if action.action == "ask" else None

    return asks
