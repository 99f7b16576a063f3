"""Stage: raw benchmark release -> canonical cases (JSONL)."""

from typing import Annotated, Any

from toolcalib.benchmarks import get_benchmark, settings
from toolcalib.jsonio import write_jsonl
from toolcalib.records import Case
from toolcalib.stages import Arg, json_object, log


def run(benchmark: str, category: str,
        source: Annotated[str, Arg("the downloaded release")], out: str,
        benchmark_options: Annotated[dict[str, Any] | None, Arg(
            "JSON: the fields of the benchmark's config section that shape its cases (τ²: "
            "ask_gold)", json_object)] = None) -> None:
    """`benchmark_options`: the fields of the benchmark's config section that shape its cases
    (its `case_settings`; τ²: `ask_gold`)."""
    bench = get_benchmark(benchmark)
    cases: list[Case] = bench.load_cases(source, category,
                                         settings(bench.case_settings, benchmark_options))
    write_jsonl(out, cases)
    log(f"normalized {len(cases)} {benchmark}/{category} cases -> {out}")
