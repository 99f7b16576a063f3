"""A classifier profile by name for a stage: rule profiles from the registry, or the judge
over the model its spec names (its answers kept in the response store)."""

from __future__ import annotations

from toolcalib.classify.base import Profile
from toolcalib.classify.judge import JudgeProfile, make_judge
from toolcalib.classify.profiles import get_profile
from toolcalib.config import parse_model_spec


def choose_profile(name: str, judge_spec: str | None = None,
                   store: str | None = None) -> Profile:
    """`judge` needs the judge model's spec (JSON, as `generate --model-spec`) and a store."""
    if name != JudgeProfile.name:
        return get_profile(name)
    if judge_spec is None or store is None:
        raise ValueError("profile 'judge' needs a judge model (--judge-spec; config `judge`) "
                         "and a response store (--store)")
    return make_judge(parse_model_spec(judge_spec, "--judge-spec"), store)
