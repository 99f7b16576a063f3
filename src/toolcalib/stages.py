"""One function per pipeline stage: read the stage's input files, run the core, write outputs.

Each output is written atomically, rows in a stable order, so the same inputs give the same
bytes. The CLI (`toolcalib <stage>`) is a thin layer over these functions.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from toolcalib.backends import make_backend
from toolcalib.benchmarks import get_benchmark
from toolcalib.classify.profiles import get_profile
from toolcalib.classify.trajectory import actions_frame, classify_trajectory
from toolcalib.config import parse_model_spec
from toolcalib.fetch import fetch_package
from toolcalib.generate import run_case
from toolcalib.jsonio import InputError, atomic_write_bytes, read_records, write_jsonl
from toolcalib.metrics.report import write_outputs
from toolcalib.records import Case, Trajectory
from toolcalib.variants import get_variant


def log(message: str) -> None:
    print(f"[toolcalib] {message}", file=sys.stderr, flush=True)


def write_parquet(path: str | Path, frame: pl.DataFrame) -> None:
    """Parquet bytes written atomically (polars output is deterministic for equal frames)."""
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(tmp, compression="zstd", statistics=False)
    atomic_write_bytes(path, tmp.read_bytes())
    tmp.unlink()


def cases_by_id(path: str | Path) -> dict[str, Case]:
    return {case.id: case for case in read_records(path, Case)}


def fetch(requirement: str, sha256: str, out: str) -> None:
    fetch_package(requirement, sha256, out)
    log(f"fetched {requirement} -> {out} (sha256 verified)")


def normalize(benchmark: str, category: str, source: str, out: str) -> None:
    cases = get_benchmark(benchmark).load_cases(source, category)
    write_jsonl(out, cases)
    log(f"normalized {len(cases)} {benchmark}/{category} cases -> {out}")


def gold(benchmark: str, cases: str, source: str, out: str) -> None:
    bench = get_benchmark(benchmark)
    rows = [bench.gold(source, case) for case in read_records(cases, Case)]
    write_jsonl(out, rows)
    log(f"executed ground truth of {len(rows)} cases -> {out}")


def generate(model_spec: str, variant: str, benchmark: str, cases: str, source: str, out: str,
             limit: int | None = None) -> None:
    spec = parse_model_spec(model_spec)
    backend = make_backend(spec)
    context = get_variant(variant)
    bench = get_benchmark(benchmark)
    selected = read_records(cases, Case)[:limit]
    trajectories = []
    for done, case in enumerate(selected, start=1):
        trajectories.append(run_case(case, backend, context,
                                     lambda c: bench.environment(source, c)))
        if done % 50 == 0 or done == len(selected):
            log(f"{spec.name}/{variant}: {done}/{len(selected)} cases")
    write_jsonl(out, trajectories)


def _matching(cases: dict[str, Case], trajectories: str) -> list[tuple[Case, Trajectory]]:
    pairs = []
    for number, trajectory in enumerate(read_records(trajectories, Trajectory), start=1):
        if trajectory.case_id not in cases:
            raise InputError(f"{trajectories}:{number}: field 'case_id': unknown case "
                             f"{trajectory.case_id!r}")
        pairs.append((cases[trajectory.case_id], trajectory))
    return pairs


def classify(profile: str, cases: str, trajectories: str, out: str) -> None:
    chosen = get_profile(profile)
    rows = [row for case, trajectory in _matching(cases_by_id(cases), trajectories)
            for row in classify_trajectory(trajectory, case, chosen)]
    write_parquet(out, actions_frame(rows))
    log(f"classified {len(rows)} emissions/turns with profile '{profile}' -> {out}")


def score(benchmark: str, cases: str, gold: str, source: str, trajectories: str,
          out: str) -> None:
    bench = get_benchmark(benchmark)
    golds = {trace.case_id: trace for trace in read_records(gold, bench.gold_record)}
    scores = [bench.score(source, case, trajectory, golds.get(case.id))
              for case, trajectory in _matching(cases_by_id(cases), trajectories)]
    frame = pl.DataFrame([s.model_dump() for s in scores], schema=SCORE_SCHEMA)
    write_parquet(out, frame)
    passed = sum(1 for s in scores if s.passed)
    log(f"scored {len(scores)} trajectories ({passed} passed) -> {out}")


SCORE_SCHEMA: dict[str, pl.DataType] = {
    "case_id": pl.String(), "benchmark": pl.String(), "category": pl.String(),
    "model": pl.String(), "variant": pl.String(), "scored": pl.Boolean(),
    "passed": pl.Boolean(), "error_type": pl.String(), "error_message": pl.String(),
    "failed_turn": pl.Int64(),
}


def aggregate(actions: Sequence[str], scores: Sequence[str], out_dir: str) -> None:
    action_frame = pl.concat([pl.read_parquet(p) for p in actions], how="vertical")
    score_frame = pl.concat([pl.read_parquet(p) for p in scores], how="vertical")
    write_outputs(out_dir, action_frame, score_frame)
    log(f"aggregated {len(actions)} action tables and {len(scores)} score tables -> {out_dir}")
