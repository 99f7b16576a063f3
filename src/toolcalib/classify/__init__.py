"""Action classification: profiles that turn emissions into action classes, and action rows."""

from toolcalib.classify.base import (
    NO_CONTEXT,
    Context,
    EmissionAction,
    Profile,
    text_class,
    turn_action,
)
from toolcalib.classify.profiles import PROFILES, get_profile
from toolcalib.classify.trajectory import ACTION_COLUMNS, classify_trajectory

__all__ = [
    "ACTION_COLUMNS",
    "NO_CONTEXT",
    "PROFILES",
    "Context",
    "EmissionAction",
    "Profile",
    "classify_trajectory",
    "get_profile",
    "text_class",
    "turn_action",
]
