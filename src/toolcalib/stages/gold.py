"""Stage: execute every case's ground truth once (model-independent)."""

from toolcalib.benchmarks import get_benchmark
from toolcalib.jsonio import read_records, write_jsonl
from toolcalib.records import Case
from toolcalib.stages import log


def run(benchmark: str, cases: str, source: str, out: str) -> None:
    bench = get_benchmark(benchmark)
    rows = [bench.gold(source, case) for case in read_records(cases, Case)]
    write_jsonl(out, rows)
    log(f"executed the ground truth of {len(rows)} cases -> {out}")
