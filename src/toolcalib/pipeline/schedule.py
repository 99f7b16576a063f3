"""How the workflow's jobs are scheduled: the order in which a model's generate jobs start (jobs
that would compute the same prompts start one after the other, so the response store answers
the later job's shared steps instead of two processes computing them side by side), and no
submission rate limit on a local run. Order and pace only: no output depends on them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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


def drop_local_rate_limit(workflow: Any) -> bool:
    """On a local run, remove Snakemake's job submission rate limit (`--max-jobs-per-timespan`,
    default 100 per second); return whether it did.

    The limit protects a cluster's scheduler; locally it only costs: after every scheduling
    round Snakemake starts a timer that runs another round a timespan later, and each job's end
    starts a round too, so the rounds per second grow with the jobs finished, each one checking
    the existence and size of every input (~50 source files) of every job waiting for a core
    (bench/README.md: 28 % of a core for the whole default run on 2 cores). Called from the
    Snakefile's `onstart`, after the scheduler exists and before it schedules; a cluster
    executor (`local_exec` false) keeps its limit."""
    scheduler = getattr(workflow, "scheduler", None)
    if not getattr(workflow, "local_exec", False) or scheduler is None:
        return False
    if getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    scheduler.job_rate_limiter = None
    return True
