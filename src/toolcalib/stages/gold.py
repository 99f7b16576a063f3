"""Stage: execute every case's ground truth once (model-independent)."""

from typing import Annotated, Any

from toolcalib.benchmarks import Benchmark, get_benchmark
from toolcalib.jsonio import read_records, write_jsonl
from toolcalib.records import Case
from toolcalib.stages import Arg, log


def known_gold(bench: Benchmark[Any, Any, Any], source: str, cases: str,
               gold: str) -> dict[str, Any]:
    """`gold_key` -> gold row of already executed cases (a release's own, for a published
    run's embedded copies of its tasks)."""
    rows = bench.read_gold(gold)
    return {key: rows[case.id] for case in read_records(cases, Case)
            if (key := bench.gold_key(source, case)) is not None}


def run(benchmark: str, cases: str, source: str, out: str,
        known_cases: Annotated[str | None, Arg(
            "cases already executed (with --known): a case of the same task takes its gold "
            "row instead of executing again")] = None,
        known: Annotated[str | None, Arg("the gold of --known-cases")] = None) -> None:
    bench = get_benchmark(benchmark)
    index = {} if known_cases is None or known is None else \
        known_gold(bench, source, known_cases, known)
    rows, reused = [], 0
    for case in read_records(cases, Case):
        key = bench.gold_key(source, case) if index else None
        row = None if key is None else index.get(key)
        reused += row is not None
        rows.append(bench.gold(source, case) if row is None else bench.gold_as(row, case))
    write_jsonl(out, rows)
    taken = f", took {reused} from a known case of the same task" if reused else ""
    log(f"executed the ground truth of {len(rows) - reused} cases{taken} -> {out}")
