"""The calibration leaderboard: one row per (published model, benchmark) under `baseline`, per
gold class GAR, TER and Acc pooled over the benchmark's categories that have that gold class,
beside the benchmark's own recorded headline.

Pooling: a gold class's numbers are sums over the cells (triples) of that class, so every
scored unit (a case, or a τ² case's further unit `<case>#ask` / `<case>#write<k>`) weighs 1,
whatever its category: a large category weighs more than a small one (no mean of per-category
rates). GAR is over the units whose GAR is decided (`gar_n`), TER and Acc over every scored
unit (`n`). The row's case counts (`n_cases`, `n_excluded`, `unknown_turns`, Acc over cases)
count each case once (its units `<case>#...` not again), from the per-case table; the GAR
undecided and bound counts are over units, summed over the row's cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from toolcalib.jsonio import InputError, atomic_write_bytes
from toolcalib.metrics.inputs import read_csv_table, read_parquet_table
from toolcalib.metrics.published import PUBLISHED_SCHEMA, Recorded
from toolcalib.metrics.rows import (
    ACC_WITHOUT_GOLD,
    CASES,
    DIGITS,
    GOLD_WITHOUT_ACC,
    TRIPLES,
    csv_bytes,
)
from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.metrics.wilson import wilson
from toolcalib.records import GOLD_CLASSES

VARIANT = "baseline"
"""The leaderboard's variant: a published run is replayed under `baseline` only."""
KEYS = ["model", "benchmark"]
POOLED = ("gar", "ter", "acc")
"""The rates pooled per gold class: GAR over `gar_n`, TER and Acc over `n`."""
SUMMARY = "summary"
"""`recorded_from`: correct/total of the benchmark's own summaries (`<category>.recorded.json`),
summed over the row's categories that record one."""
RECORDS_MEAN = "records mean"
"""`recorded_from`: no category records a summary (τ²); the mean recorded reward of the
published records (`published.csv`, every record with one) stands in; no `recorded_correct`."""


def _rate(prefix: str, label: str | None, denominator: bool = False) -> list[Column]:
    return [*([Column(f"{prefix}_n", "int")] if denominator else []),
            Column(f"{prefix}_k", "int"), Column(prefix, "float", label),
            Column(f"{prefix}_lo", "float"), Column(f"{prefix}_hi", "float")]


def _gold_columns(gold: str) -> list[Column]:
    return [Column(f"{gold}_cells", "int"), Column(f"{gold}_n", "int", f"{gold} n"),
            *_rate(f"{gold}_gar", f"{gold} GAR", denominator=True),
            *_rate(f"{gold}_ter", f"{gold} TER"), *_rate(f"{gold}_acc", f"{gold} Acc")]


LEADERBOARD = TableSpec("leaderboard", 1, (
    Column("model", label="model"), Column("benchmark", label="benchmark"),
    Column("categories"),
    Column("n_cases", "int", "cases"), Column("n_excluded", "int", "excluded"),
    Column("unknown_turns", "int", "unknown turns"),
    Column("n_gar_unknown", "int", "GAR undecided"),
    Column(ACC_WITHOUT_GOLD, "int", "Acc>GAR"), Column(GOLD_WITHOUT_ACC, "int", "GAR>Acc"),
    *_rate("acc", "Acc (cases)"),
    Column("recorded", "float", "recorded"), Column("recorded_correct", "int"),
    Column("recorded_total", "int"), Column("recorded_from"), Column("recorded_categories"),
    *(column for gold in GOLD_CLASSES for column in _gold_columns(gold)),
))
"""The leaderboard (`leaderboard.csv`), sorted by benchmark, then model.

`categories`: the benchmark's categories with a cell (`|`-joined, sorted). `n_cases`: scored
cases, each once; `n_excluded`: cases excluded by an infrastructure outcome (error, context
overflow; in no denominator); `unknown_turns`: turns of class `unknown` (the record kept no
text) over the scored cases; `acc*`: the benchmark's verdict over `n_cases`. `n_gar_unknown`,
`acc_without_gold` (Acc>GAR), `gold_without_acc` (GAR>Acc): scored units, summed over the
cells. `recorded`: the benchmark's own headline as it recorded it (`recorded_from`: `summary`
or `records mean`; `recorded_categories`: the categories it comes from), not recomputed.
Per gold class `<g>` of `GOLD_CLASSES`: `<g>_cells`, the categories pooled (0: the benchmark
has no such class here, every rate null); `<g>_n`, scored units; `<g>_gar_n`, units whose GAR
is decided, `<g>_gar_k` of them hit; `<g>_ter_k`, `<g>_acc_k` over `<g>_n`; each rate with its
95% Wilson interval (`_lo`, `_hi`), null where its denominator is 0."""
LEADERBOARD_SCHEMA: dict[str, pl.DataType] = LEADERBOARD.schema()
TRIPLE_NEEDS = ("model", "variant", "benchmark", "category", "gold_action", "n", "gar_n",
                "gar_k", "ter_k", "acc_k", "n_gar_unknown", ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC)
CASE_NEEDS = ("model", "variant", "benchmark", "case_id", "scored", "passed", "unknown_turns")


def published_models(published: pl.DataFrame, recorded: Sequence[Recorded] = ()) -> list[str]:
    """The published runs (backend `replay`): the models of the published records table
    (`published.csv`) and of the recorded headlines, sorted."""
    return sorted(set(published["model"].to_list()) | {r.model for r in recorded})


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _rates(prefix: str, k: int, n: int) -> dict[str, Any]:
    low, high = wilson(k, n)
    return {f"{prefix}_k": k, prefix: _round(k / n) if n else None,
            f"{prefix}_lo": _round(low), f"{prefix}_hi": _round(high)}


def _require(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"the {what} table lacks column(s) {missing}")


def _gold(cells: pl.DataFrame, gold: str) -> dict[str, Any]:
    rows = cells.filter(pl.col("gold_action") == gold)
    total = {c: int(rows[c].sum() or 0) for c in ("n", "gar_n", "gar_k", "ter_k", "acc_k")}
    return {f"{gold}_cells": rows.height, f"{gold}_n": total["n"],
            f"{gold}_gar_n": total["gar_n"], **_rates(f"{gold}_gar", total["gar_k"],
                                                      total["gar_n"]),
            **_rates(f"{gold}_ter", total["ter_k"], total["n"]),
            **_rates(f"{gold}_acc", total["acc_k"], total["n"])}


def _recorded(model: str, benchmark: str, recorded: Sequence[Recorded],
              published: pl.DataFrame) -> dict[str, Any]:
    summaries = sorted((r for r in recorded if (r.model, r.benchmark) == (model, benchmark)
                        and r.correct_count is not None and r.total_count is not None),
                       key=lambda r: r.category)
    if summaries:
        correct = sum(r.correct_count or 0 for r in summaries)
        total = sum(r.total_count or 0 for r in summaries)
        return {"recorded": _round(correct / total) if total else None,
                "recorded_correct": correct, "recorded_total": total, "recorded_from": SUMMARY,
                "recorded_categories": "|".join(r.category for r in summaries)}
    rewards = published.filter((pl.col("model") == model) & (pl.col("benchmark") == benchmark)
                               & pl.col("recorded_reward").is_not_null())
    if rewards.height:
        mean = rewards["recorded_reward"].mean()
        return {"recorded": _round(float(mean)) if isinstance(mean, int | float) else None,
                "recorded_correct": None, "recorded_total": rewards.height,
                "recorded_from": RECORDS_MEAN,
                "recorded_categories": "|".join(sorted(set(rewards["category"].to_list())))}
    return dict.fromkeys(("recorded", "recorded_correct", "recorded_total", "recorded_from",
                          "recorded_categories"))


def _cases(cases: pl.DataFrame) -> dict[str, Any]:
    """The row's case counts: each case once (the units `<case>#...` of a case left out)."""
    own = cases.filter(~pl.col("case_id").str.contains("#", literal=True))
    scored = own.filter(pl.col("scored").fill_null(False))
    n = scored.height
    return {"n_cases": n, "n_excluded": own.height - n,
            "unknown_turns": int(scored["unknown_turns"].fill_null(0).sum() or 0),
            **_rates("acc", int(scored["passed"].fill_null(False).sum() or 0), n)}


def leaderboard_rows(triples: pl.DataFrame, per_case: pl.DataFrame, published: pl.DataFrame,
                     recorded: Sequence[Recorded] = ()) -> list[dict[str, Any]]:
    """One `LEADERBOARD` row per (published model, benchmark) with a `baseline` cell or a
    recorded headline, sorted by benchmark, then model. `triples`, `per_case`: the metrics
    tables (with the columns `TRIPLE_NEEDS`, `CASE_NEEDS`); `published`: the published records
    table (`published.csv`: its models are the published runs, its recorded rewards stand in
    where no summary is recorded); `recorded`: the imports' recorded headlines."""
    _require(triples, TRIPLE_NEEDS, "triples")
    _require(per_case, CASE_NEEDS, "per-case")
    models = published_models(published, recorded)
    cells = triples.filter(pl.col("model").is_in(models) & (pl.col("variant") == VARIANT))
    strange = cells.filter(~pl.col("gold_action").is_in(GOLD_CLASSES))
    if strange.height:
        first = strange.row(0, named=True)
        raise InputError(f"{strange.height} triple(s) with a gold class not of {GOLD_CLASSES}: "
                         f"{first['model']}/{first['benchmark']}/{first['category']} "
                         f"{first['gold_action']!r}")
    cases = per_case.filter(pl.col("model").is_in(models) & (pl.col("variant") == VARIANT))
    empty = cases.clear()
    case_groups = cases.partition_by("model", "benchmark", as_dict=True)
    pairs = sorted({(b, m) for m, b in cells.select("model", "benchmark").iter_rows()}
                   | {(r.benchmark, r.model) for r in recorded})
    rows = []
    for benchmark, model in pairs:
        own = cells.filter((pl.col("model") == model) & (pl.col("benchmark") == benchmark))
        sums = {c: int(own[c].sum() or 0)
                for c in ("n_gar_unknown", ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC)}
        rows.append(LEADERBOARD.row({
            "model": model, "benchmark": benchmark,
            "categories": "|".join(sorted(set(own["category"].to_list()))),
            **_cases(case_groups.get((model, benchmark), empty)),
            **sums, **_recorded(model, benchmark, recorded, published),
            **{k: v for gold in GOLD_CLASSES for k, v in _gold(own, gold).items()},
        }))
    return rows


def leaderboard(triples: pl.DataFrame, per_case: pl.DataFrame, published: pl.DataFrame,
                recorded: Sequence[Recorded] = ()) -> pl.DataFrame:
    """`leaderboard_rows` as a typed frame."""
    return pl.DataFrame(leaderboard_rows(triples, per_case, published, recorded),
                        schema=LEADERBOARD_SCHEMA)


def leaderboard_csv(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """`leaderboard.csv`'s bytes: the rows as given (sorted by `leaderboard_rows`), floats
    with `DIGITS` decimals, no timestamp."""
    return csv_bytes(rows, LEADERBOARD.names)


FILE = "leaderboard.csv"


def write_leaderboard(out_dir: str | Path, recorded: Sequence[Recorded] = ()) -> Path:
    """`out_dir/leaderboard.csv`, from the metrics tables aggregation wrote there (triples,
    per-case, published records) and the recorded headlines; its path."""
    out = Path(out_dir)
    rows = leaderboard_rows(read_csv_table(out / "triples.csv", TRIPLES.schema()),
                            read_parquet_table(out / "per_case.parquet", CASES),
                            read_csv_table(out / "published.csv", PUBLISHED_SCHEMA), recorded)
    atomic_write_bytes(out / FILE, leaderboard_csv(rows))
    return out / FILE
