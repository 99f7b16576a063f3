"""Stage: run one model on one category's cases under one context variant.

Cacheable backends go through the response store: a rerun after completion makes zero model
calls, and a run killed midway loses no answered request.

Requests that finally failed (after the backend's retries) fail the job: every answer it got is
in the store, the output is not written (a stale one is removed), and `RequestsFailed` says how
many cases failed, the last error, and that a rerun asks only what the store lacks. A model's
`max_failed_share` lets up to that share of the cases pass as excluded (outcome `error`).
Context overflow is never a failure (an excluded outcome, not retryable), nor is a
non-cacheable backend's error (a replay's recorded error: a rerun would answer the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from toolcalib.backends import make_backend
from toolcalib.backends.base import Backend
from toolcalib.backends.policy import PolicyBackend
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.benchmarks import get_benchmark, settings
from toolcalib.classify.default import DefaultProfile
from toolcalib.classify.profiles import asks_user, read_alone
from toolcalib.config import parse_model_spec
from toolcalib.generate import run_cases
from toolcalib.jsonio import InputError, read_records, write_jsonl
from toolcalib.progress import Progress
from toolcalib.records import Case, Trajectory
from toolcalib.stages import Arg, CaseIds, Limit, json_object, log
from toolcalib.variants import get_variant, refusal

USER_PROFILE = DefaultProfile.name
"""Whose reading of the agent's text alone a benchmark's simulated user answers by (τ²'s
reference user), handed to the benchmark's loop."""
GATE_PROFILE = DefaultProfile.name
"""Whose reading of a halting reply alone decides whether it asks the user (the `sri-gate`
probe's gate), handed to the loop."""
DATA_FILES = ("data/default_classifier.yaml",)
"""The cues those profiles read (the job's sources include them)."""
FAILED = "{failed} of {total} cases of {label} failed"
"""How a failed job's message starts (`toolcalib status` reads it from the job's log)."""


class RequestsFailed(RuntimeError):
    """Requests of a job finally failed: nothing was written (the CLI exits with status 1)."""

    exit_status = 1


def run(model_spec: Annotated[str, Arg("JSON: {name, backend, options}")], variant: str,
        benchmark: str, cases: str, source: str, out: str, limit: Limit = None,
        store: Annotated[str | None, Arg("response store folder (cacheable backends)")] = None,
        explain_misses: Annotated[int, Arg("log why the first N store misses missed (which "
                                           "key part differs)")] = 3,
        case_ids: CaseIds = None,
        benchmark_options: Annotated[dict[str, Any] | None, Arg(
            "JSON: the loop's fields of the benchmark's config section (τ²: user, max_steps, "
            "max_errors)", json_object)] = None,
        user_spec: Annotated[str | None, Arg("JSON, as --model-spec: the model playing a "
                                             "simulated user")] = None) -> None:
    """`benchmark_options`: the loop's fields of the benchmark's config section (its
    `loop_settings`); `user_spec`: the model playing a simulated user (JSON, as `model_spec`),
    if not the reference user. A reference policy answers as the benchmark means it where it
    has a meaning of its own (`Benchmark.policies`). A variant the benchmark (or a replayed run)
    does not run is refused (`variants.refusal`)."""
    spec = parse_model_spec(model_spec)
    context = get_variant(variant)
    bench = get_benchmark(benchmark)
    refused = refusal(spec.name, spec.backend, variant, benchmark, bench.variants)
    if refused is not None:
        raise InputError(refused)
    loop = settings(bench.loop_settings, benchmark_options)
    selected = select(read_records(cases, Case), cases, limit, case_ids)
    label = f"{spec.name}/{variant}/{benchmark}/{selected[0].category if selected else '-'}"
    if not selected:  # `limit` 0: the category is not run, and no model is loaded for it
        write_jsonl(out, [])
        log(f"{label}: no cases selected -> {out} (empty)")
        return
    agent = PolicyBackend(spec, bench.policies) if spec.backend == "policy" else \
        make_backend(spec)
    backend = _stored(agent, spec.name, store, explain_misses)
    user = None
    if user_spec is not None:
        user_model = parse_model_spec(user_spec, "--user-spec")
        user = _stored(make_backend(user_model), user_model.name, store, explain_misses)
    progress = Progress(label, len(selected))
    trajectories = list(run_cases(selected, backend, context,
                                  lambda c: bench.environment(source, c),
                                  batch_size=spec.batch_size,
                                  on_done=lambda _: progress.advance(),
                                  loop=bench.loop(loop, user, source,
                                                  read_alone(USER_PROFILE)),
                                  user=user, gate=asks_user(GATE_PROFILE)))
    players = (("", backend), ("user simulator: ", user))
    for who, used in players:
        if used is None:
            continue
        if isinstance(used, StoredBackend):
            log(f"{label}: {who}{used.misses} model calls, {used.hits} answers from the store, "
                f"{used.errors} failed requests (not stored)")
            for text in used.explanations:
                log(f"store miss: {who}{text}")
        inner = used.inner if isinstance(used, StoredBackend) else used
        if hasattr(inner, "work_summary"):
            log(f"{label}: {who}{inner.work_summary()}")
    cacheable = backend.cacheable or (user is not None and user.cacheable)
    failed = [t for t in trajectories if t.outcome == "error"] if cacheable else []
    if len(failed) > spec.max_failed_share * len(trajectories):
        Path(out).unlink(missing_ok=True)
        stored = [used for _, used in players if isinstance(used, StoredBackend)]
        answered = (sum(used.misses - used.errors for used in stored),
                    sum(used.hits for used in stored))
        raise RequestsFailed(failure_message(label, trajectories, failed, store, out, answered))
    write_jsonl(out, trajectories)
    if failed:
        log(f"{label}: {FAILED.format(failed=len(failed), total=len(trajectories), label=label)}"
            f" (last error: {failed[-1].error}); kept as excluded cases (outcome `error`): "
            f"within the model's max_failed_share {spec.max_failed_share:g}")
    log(f"{label}: {len(trajectories)} trajectories -> {out}")


def _stored(backend: Backend, name: str, store: str | None, explain_misses: int) -> Backend:
    """A cacheable backend behind the response store (which a cacheable backend needs)."""
    if not backend.cacheable:
        return backend
    if store is None:
        raise InputError(f"model '{name}': a response store (--store) is required")
    return StoredBackend(backend, ResponseStore(store), explain_misses=explain_misses)


def failure_message(label: str, trajectories: list[Trajectory], failed: list[Trajectory],
                    store: str | None, out: str, answered: tuple[int, int]) -> str:
    """One paragraph: what failed, the last error, what was kept (`answered`: requests
    answered now, and from the store), what a rerun does."""
    return (f"{FAILED.format(failed=len(failed), total=len(trajectories), label=label)}: their "
            f"requests got no answer after the backend's retries (last error: "
            f"{failed[-1].error}). Every answer received is kept in the response store "
            f"({store}: {answered[0]} answered now, {answered[1]} from earlier runs); no "
            f"trajectories were written ({out}), so the job counts as failed and "
            f"Snakemake runs it again. Rerunning the same command asks only the failed requests "
            f"(and the steps after them in those conversations): the rest come from the store. "
            f"To let some failed cases pass as excluded (outcome `error`, never scored), set "
            f"`max_failed_share` (a share of the job's cases) in the model's config entry.")


def select(all_cases: list[Case], path: str, limit: int | None,
           case_ids: list[str] | None) -> list[Case]:
    """The cases named by `case_ids` (in file order; every id must be in `path`), else the
    first `limit`."""
    if case_ids is None:
        return all_cases[:limit]
    wanted = set(case_ids)
    if missing := wanted - {case.id for case in all_cases}:
        raise InputError(f"{path}: no case with id {', '.join(sorted(missing))} (--case-ids)")
    return [case for case in all_cases if case.id in wanted]
