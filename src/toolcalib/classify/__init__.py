"""Action classification: profiles that turn emissions into action classes, and action tables."""

from toolcalib.classify.base import EmissionAction, Profile, text_class, turn_action
from toolcalib.classify.profiles import PROFILES, get_profile
from toolcalib.classify.trajectory import (
    ACTION_SCHEMA,
    ActionRow,
    actions_frame,
    classify_trajectory,
)

__all__ = [
    "ACTION_SCHEMA",
    "PROFILES",
    "ActionRow",
    "EmissionAction",
    "Profile",
    "actions_frame",
    "classify_trajectory",
    "get_profile",
    "text_class",
    "turn_action",
]
