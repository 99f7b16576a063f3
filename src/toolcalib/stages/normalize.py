"""Stage: raw benchmark release -> canonical cases (JSONL)."""

from toolcalib.benchmarks import get_benchmark
from toolcalib.jsonio import write_jsonl
from toolcalib.records import Case
from toolcalib.stages import log


def run(benchmark: str, category: str, source: str, out: str) -> None:
    cases: list[Case] = get_benchmark(benchmark).load_cases(source, category)
    write_jsonl(out, cases)
    log(f"normalized {len(cases)} {benchmark}/{category} cases -> {out}")
