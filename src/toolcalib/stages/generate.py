"""Stage: run one model on one category's cases under one context variant."""

from __future__ import annotations

from toolcalib.backends import make_backend
from toolcalib.benchmarks import get_benchmark
from toolcalib.config import parse_model_spec
from toolcalib.generate import run_cases
from toolcalib.jsonio import read_records, write_jsonl
from toolcalib.records import Case
from toolcalib.stages import log
from toolcalib.variants import get_variant


def run(model_spec: str, variant: str, benchmark: str, cases: str, source: str, out: str,
        limit: int | None = None) -> None:
    spec = parse_model_spec(model_spec)
    backend = make_backend(spec)
    context = get_variant(variant)
    bench = get_benchmark(benchmark)
    selected = read_records(cases, Case)[:limit]
    trajectories = run_cases(selected, backend, context, lambda c: bench.environment(source, c))
    write_jsonl(out, list(trajectories))
    log(f"{spec.name}/{variant}: {len(selected)} cases -> {out}")
