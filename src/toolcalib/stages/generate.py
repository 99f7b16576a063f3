"""Stage: run one model on one category's cases under one context variant.

Cacheable backends go through the response store: a rerun after completion makes zero model
calls, and a run killed midway loses no answered request.
"""

from __future__ import annotations

from toolcalib.backends import make_backend
from toolcalib.benchmarks import get_benchmark
from toolcalib.config import parse_model_spec
from toolcalib.generate import run_cases
from toolcalib.jsonio import InputError, read_records, write_jsonl
from toolcalib.progress import Progress
from toolcalib.records import Case
from toolcalib.stages import log
from toolcalib.store import ResponseStore, StoredBackend
from toolcalib.variants import get_variant


def run(model_spec: str, variant: str, benchmark: str, cases: str, source: str, out: str,
        limit: int | None = None, store: str | None = None, explain_misses: int = 3,
        case_ids: list[str] | None = None) -> None:
    spec = parse_model_spec(model_spec)
    backend = make_backend(spec)
    if backend.cacheable:
        if store is None:
            raise ValueError(f"model '{spec.name}': a response store (--store) is required")
        backend = StoredBackend(backend, ResponseStore(store), explain_misses=explain_misses)
    context = get_variant(variant)
    bench = get_benchmark(benchmark)
    selected = select(read_records(cases, Case), cases, limit, case_ids)
    label = f"{spec.name}/{variant}/{benchmark}/{selected[0].category if selected else '-'}"
    progress = Progress(label, len(selected))
    trajectories = list(run_cases(selected, backend, context,
                                  lambda c: bench.environment(source, c),
                                  batch_size=spec.batch_size,
                                  on_done=lambda _: progress.advance()))
    write_jsonl(out, trajectories)
    if isinstance(backend, StoredBackend):
        log(f"{label}: {backend.misses} model calls, {backend.hits} answers from the store, "
            f"{backend.errors} failed requests (not stored)")
        for text in backend.explanations:
            log(f"store miss: {text}")
    inner = backend.inner if isinstance(backend, StoredBackend) else backend
    if hasattr(inner, "work_summary"):
        log(f"{label}: {inner.work_summary()}")
    log(f"{label}: {len(trajectories)} trajectories -> {out}")


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
