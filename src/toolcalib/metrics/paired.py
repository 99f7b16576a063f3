"""Paired comparisons of two groups (models or variants) on the same cases, with exact McNemar.

A pair is one (benchmark, category, case_id) present and scored in both groups; every other
case of either group is left out of the comparison and counted in `n_unpaired_a`/`_b`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import polars as pl

from toolcalib.metrics.rows import DIGITS, RATES
from toolcalib.metrics.spec import Column, TableSpec

PAIR_KEYS = ["benchmark", "category", "case_id"]
GROUP_KEYS = ["benchmark", "category"]

SHIFT_METRICS = ("gar", "ter", "acc")
"""The metrics of `shift_table` and `compare_models`, in their sort order."""
METRICS: dict[str, str] = {rate: RATES[rate] for rate in (*SHIFT_METRICS, "gar_turn")}
"""Each comparable metric (a rate of `rows.RATES`) and the boolean per-case column it is the
share of."""

FLIP_SEP = "|"

PAIRED = TableSpec("paired", 1, (
    Column("benchmark"), Column("category"), Column("metric"), Column("n_pairs", "int"),
    Column("rate_a", "float"), Column("rate_b", "float"), Column("delta", "float"),
    Column("b01", "int"), Column("b10", "int"), Column("p_value", "float"),
    Column("flips_gained"), Column("flips_lost"), Column("n_unpaired_a", "int"),
    Column("n_unpaired_b", "int"),
))
"""`PairedResult.table`: `b01` counts a-miss -> b-hit pairs (`flips_gained`, sorted case ids),
`b10` a-hit -> b-miss (`flips_lost`); `delta` = rate_b - rate_a; rates are null without
pairs."""
PAIRED_SCHEMA: dict[str, pl.DataType] = PAIRED.schema()

SHIFT_RENAMES = {
    "rate_a": "rate_baseline",
    "rate_b": "rate_variant",
    "n_unpaired_a": "n_unpaired_baseline",
    "n_unpaired_b": "n_unpaired_variant",
}
SHIFT = PAIRED.derive("shift", 1, (Column("model"), Column("variant")), SHIFT_RENAMES)
"""`shift_table` (`shift.csv`): a variant with no paired case has n_pairs 0 and null rates; no
variant at all, no row."""
SHIFT_SCHEMA: dict[str, pl.DataType] = SHIFT.schema()


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2)."""
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (b, c)):
        raise TypeError(f"mcnemar_exact: need integer counts, got b={b!r}, c={c!r}")
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact: need non-negative counts, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@dataclass(frozen=True)
class PairedResult:
    """One metric compared between selections `a` and `b`: one row per (benchmark, category)."""

    a: dict[str, Any]
    b: dict[str, Any]
    metric: str
    table: pl.DataFrame = field(repr=False)


def _column(per_case: pl.DataFrame, metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {sorted(METRICS)}")
    column = METRICS[metric]
    missing = sorted({column, "scored", *PAIR_KEYS} - set(per_case.columns))
    if missing:
        raise ValueError(f"per-case table lacks column(s) {missing}")
    return column


def _side(per_case: pl.DataFrame, where: Mapping[str, Any], column: str, name: str) -> pl.DataFrame:
    """The selected rows as benchmark, category, case_id, in_<name>, scored_<name>, hit_<name>."""
    if not where:
        raise ValueError(f"selection {name} is empty")
    unknown = sorted(set(where) - set(per_case.columns))
    if unknown:
        raise ValueError(f"selection {name} names unknown column(s) {unknown}")
    rows = per_case.filter(*(pl.col(key) == value for key, value in where.items()))
    dupes = rows.filter(pl.struct(PAIR_KEYS).is_duplicated())
    if dupes.height:
        first = dupes.sort(PAIR_KEYS).row(0, named=True)
        raise ValueError(
            f"selection {name}={dict(where)} matches several rows per case (e.g. "
            f"{first['benchmark']}/{first['category']}/{first['case_id']}); select one group"
        )
    scored = pl.col("scored").fill_null(False)
    hits = rows.filter(scored & pl.col(column).is_null())
    if hits.height:
        raise ValueError(f"selection {name}: {hits.height} scored case(s) have null {column}")
    return rows.select(
        *PAIR_KEYS,
        pl.lit(True).alias(f"in_{name}"),
        scored.alias(f"scored_{name}"),
        pl.col(column).fill_null(False).cast(pl.Boolean).alias(f"hit_{name}"),
    )


def _flips(mask: pl.Expr) -> pl.Expr:
    return pl.col("case_id").filter(mask).sort().str.join(FLIP_SEP)


def _rate(k: int, n: int) -> float | None:
    return round(k / n, DIGITS) if n else None


def paired(
    per_case: pl.DataFrame, *, a: Mapping[str, Any], b: Mapping[str, Any], metric: str
) -> PairedResult:
    """Compare `metric` between the rows selected by `a` and by `b` (column -> value) on the
    cases scored in both, per (benchmark, category), with exact McNemar on the discordant pairs.
    """
    column = _column(per_case, metric)
    joined = _side(per_case, a, column, "a").join(
        _side(per_case, b, column, "b"), on=PAIR_KEYS, how="full", coalesce=True
    )
    in_a, in_b = pl.col("in_a").fill_null(False), pl.col("in_b").fill_null(False)
    pair = in_a & in_b & pl.col("scored_a").fill_null(False) & pl.col("scored_b").fill_null(False)
    hit_a, hit_b = pl.col("hit_a"), pl.col("hit_b")
    counts = joined.group_by(GROUP_KEYS).agg(
        n_pairs=pair.sum().cast(pl.Int64),
        k_a=(pair & hit_a).sum().cast(pl.Int64),
        k_b=(pair & hit_b).sum().cast(pl.Int64),
        b01=(pair & ~hit_a & hit_b).sum().cast(pl.Int64),
        b10=(pair & hit_a & ~hit_b).sum().cast(pl.Int64),
        flips_gained=_flips(pair & ~hit_a & hit_b),
        flips_lost=_flips(pair & hit_a & ~hit_b),
        n_unpaired_a=(in_a & ~pair).sum().cast(pl.Int64),
        n_unpaired_b=(in_b & ~pair).sum().cast(pl.Int64),
    )
    rows = []
    for row in counts.sort(GROUP_KEYS).iter_rows(named=True):
        n, k_a, k_b = row["n_pairs"], row["k_a"], row["k_b"]
        rows.append(
            {
                **row,
                "metric": metric,
                "rate_a": _rate(k_a, n),
                "rate_b": _rate(k_b, n),
                "delta": _rate(k_b - k_a, n),
                "p_value": mcnemar_exact(row["b01"], row["b10"]),
            }
        )
    table = pl.DataFrame(
        [{name: row[name] for name in PAIRED.names} for row in rows], schema=PAIRED_SCHEMA
    )
    return PairedResult(a=dict(a), b=dict(b), metric=metric, table=table)


def _metric_order(metrics: Sequence[str]) -> pl.Expr:
    return pl.col("metric").replace_strict({m: i for i, m in enumerate(metrics)})


def shift_table(
    per_case: pl.DataFrame, baseline: str = "baseline", metrics: Sequence[str] = SHIFT_METRICS
) -> pl.DataFrame:
    """Every (model, variant != baseline) against that model's baseline, per (benchmark,
    category) and metric: rate_baseline, rate_variant, delta (variant - baseline), b01 / b10
    (flips gained / lost by the variant), exact McNemar p_value and the flipped case ids.
    """
    groups = (
        per_case.filter(pl.col("variant") != baseline)
        .select("model", "variant")
        .unique()
        .sort("model", "variant")
    )
    frames = []
    for model, variant in groups.iter_rows():
        for metric in metrics:
            result = paired(
                per_case,
                a={"model": model, "variant": baseline},
                b={"model": model, "variant": variant},
                metric=metric,
            )
            frames.append(
                result.table.rename(SHIFT_RENAMES).select(
                    pl.lit(model).alias("model"), pl.lit(variant).alias("variant"), pl.all()
                )
            )
    if not frames:
        return pl.DataFrame(schema=SHIFT_SCHEMA)
    return (
        pl.concat(frames)
        .sort("model", "variant", "benchmark", "category", _metric_order(metrics))
        .select(SHIFT.names)
    )


def compare_models(
    per_case: pl.DataFrame,
    model_a: str,
    model_b: str,
    variant: str = "baseline",
    metrics: Sequence[str] = SHIFT_METRICS,
) -> pl.DataFrame:
    """`model_b` against `model_a` on `variant`, per (benchmark, category) and metric; columns
    model_a, model_b, variant, then those of `PAIRED` (delta = model_b - model_a)."""
    if not metrics:
        raise ValueError("compare_models: no metrics")
    frames = [
        paired(
            per_case,
            a={"model": model_a, "variant": variant},
            b={"model": model_b, "variant": variant},
            metric=metric,
        ).table
        for metric in metrics
    ]
    return (
        pl.concat(frames)
        .sort("benchmark", "category", _metric_order(metrics))
        .select(
            pl.lit(model_a, pl.String()).alias("model_a"),
            pl.lit(model_b, pl.String()).alias("model_b"),
            pl.lit(variant, pl.String()).alias("variant"),
            pl.all(),
        )
    )
