"""(GAR, TER, Acc) per (model, variant, benchmark, category), with counts and Wilson intervals."""

from __future__ import annotations

from typing import Any

import polars as pl

from toolcalib.metrics.inputs import KEYS
from toolcalib.metrics.per_case import ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC
from toolcalib.metrics.wilson import wilson

DIGITS = 6
"""Rates and bounds are rounded to this many decimals, for stable bytes."""

RATES: dict[str, str] = {
    "gar": "gold_emitted",
    "gar_turn": "gold_turn_hit",
    "gar_emission": "gold_emitted_any_step",
    "ter": "tool_call_emitted",
    "ter_turn": "gold_turn_tool_call",
    "acc": "passed",
}
"""Each rate and the per-case column whose share of scored cases it is."""

COUNTS = ["n", "n_excluded", "n_context_overflow", "n_error", "n_step_cap", "n_probed",
          ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC]
"""`n_excluded` = `n_context_overflow` + `n_error` (infrastructure, out of every denominator);
`n_probed`: scored cases where the variant's probe fired at least once."""


def _rate_columns(rate: str) -> list[str]:
    return [f"{rate}_k", rate, f"{rate}_lo", f"{rate}_hi"]


TRIPLE_SCHEMA: dict[str, pl.DataType] = {
    **{key: pl.String() for key in KEYS},
    "gold_action": pl.String(),
    **{count: pl.Int64() for count in COUNTS},
    **{
        column: pl.Int64() if column.endswith("_k") else pl.Float64()
        for rate in RATES
        for column in _rate_columns(rate)
    },
}
"""The columns of the triples table, in order; `<rate>_k` is the numerator of `<rate>`."""


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _rates(row: dict[str, Any]) -> dict[str, Any]:
    n = row["n"]
    for rate in RATES:
        k = row[f"{rate}_k"]
        low, high = wilson(k, n)
        row[rate] = _round(k / n) if n else None
        row[f"{rate}_lo"], row[f"{rate}_hi"] = _round(low), _round(high)
    return row


def triples(cases: pl.DataFrame) -> pl.DataFrame:
    """Aggregate the per-case table; unscored cases count only in `n_excluded`.

    Every case weighs 1 within its group; groups are never pooled.
    """
    scored = pl.col("scored")
    counts = cases.group_by(KEYS).agg(
        gold_action=pl.col("gold_action").unique().sort().str.join("|"),
        n=scored.sum(),
        n_excluded=(~scored).sum(),
        n_context_overflow=(pl.col("outcome") == "context_overflow").sum(),
        n_error=(pl.col("outcome") == "error").sum(),
        n_step_cap=(scored & (pl.col("outcome") == "step_cap")).sum(),
        n_probed=(scored & (pl.col("probes_fired") > 0)).sum(),
        **{name: (pl.col("bound") == name).sum() for name in (ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC)},
        **{f"{rate}_k": (scored & pl.col(column)).sum() for rate, column in RATES.items()},
    )
    rows = [_rates(row) for row in counts.iter_rows(named=True)]
    return pl.DataFrame(rows, schema=TRIPLE_SCHEMA).sort(KEYS)
