"""The order in which a model's generate jobs start: jobs that would compute the same prompts
start one after the other, so the response store answers the later job's shared steps
instead of two processes computing them side by side. Order only: no output depends on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def generate_priority(variants: Sequence[str], categories: Sequence[str],
                      opens_as: Mapping[str, str], variant: str, category: str) -> int:
    """Snakemake priority (higher starts first) of one model's (variant, category) job.

    Variants start in the model's order, the first (`baseline`) before all others: a variant
    repeats the first one's prompts until its manipulation takes effect (`sri`: until a probe
    fires). Within a variant, categories whose cases open as another category's cases do
    (`opens_as`; BFCL's long_context and miss_param cases start as the base case) start after
    every other category, by when the one they open as has usually finished."""
    order = [c for c in categories if c not in opens_as] + [c for c in categories if c in opens_as]
    return (len(variants) - variants.index(variant)) * len(order) - order.index(category)
