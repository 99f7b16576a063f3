"""A classifier profile by name for a stage: rule profiles from the registry, or the judge
over the model its spec names (its answers kept in the response store).

The judge (its backends and the response store) is imported only when asked for, so a
stage running a rule profile starts without it; the workflow lists `classify/judge.py` among
the profile sources every classifying job depends on."""

from __future__ import annotations

from toolcalib.classify.base import Profile
from toolcalib.classify.profiles import get_profile
from toolcalib.jsonio import InputError

JUDGE = "judge"
"""The judge profile's name (`JudgeProfile.name`)."""


def choose_profile(name: str, judge_spec: str | None = None,
                   store: str | None = None) -> Profile:
    """`judge` needs the judge model's spec (JSON, as `generate --model-spec`) and a store."""
    if name != JUDGE:
        return get_profile(name)
    from toolcalib.classify.judge import make_judge
    from toolcalib.config import parse_model_spec

    if judge_spec is None or store is None:
        raise InputError("profile 'judge' needs a judge model (--judge-spec; config `judge`) "
                         "and a response store (--store)")
    # the judge's rules: the default profile's (`JudgeProfile.rules`)
    return make_judge(parse_model_spec(judge_spec, "--judge-spec"), store, get_profile("default"))
