"""Paired comparisons of two sides on the same cases, with exact McNemar.

A side is the rows a selection picks (column -> value: a model, a variant, a model under a
variant...). A case is one value of `keys` (by default benchmark, category, case_id); it is a
pair when it is present and scored on both sides and the metric is decided on both. A case
scored on both sides whose metric is null on either (GAR undecided: the text that could have
been the gold class was not recorded) is no pair and is counted in `n_undecided`; every other
case of either side is left out and counted in `n_unpaired_a`/`_b`. Results are one row per
value of `groups` (a part of `keys`), never pooled across them.

Two uses: `shift_table` (each variant against its model's baseline, `shift.csv`) and
`metrics.pairs` (the config's model-vs-model `pairs`, `pairs.csv`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import polars as pl

from toolcalib.metrics.rows import DECIDABLE, DIGITS, RATES
from toolcalib.metrics.spec import Column, TableSpec

PAIR_KEYS = ["benchmark", "category", "case_id"]
GROUP_KEYS = ["benchmark", "category"]

SHIFT_METRICS = ("gar", "ter", "acc")
"""The metrics of `shift_table` and `compare_models`, in their sort order."""
METRICS: dict[str, str] = {rate: RATES[rate] for rate in (*SHIFT_METRICS, "gar_turn")}
"""Each comparable metric (a rate of `rows.RATES`) and the boolean per-case column it is the
share of."""

FLIP_SEP = "|"

STATS = (
    Column("metric"), Column("n_pairs", "int"), Column("rate_a", "float"),
    Column("rate_b", "float"), Column("delta", "float"), Column("b01", "int"),
    Column("b10", "int"), Column("p_value", "float"), Column("flips_gained"),
    Column("flips_lost"), Column("n_unpaired_a", "int"), Column("n_unpaired_b", "int"),
    Column("n_undecided", "int"),
)
"""The columns of a comparison after its group keys."""


def paired_spec(name: str, schema_version: int, groups: Sequence[str]) -> TableSpec:
    """The table of `paired` with these `groups`: the group keys, then `STATS`."""
    return TableSpec(name, schema_version, (*(Column(key) for key in groups), *STATS))


PAIRED = paired_spec("paired", 2, GROUP_KEYS)
"""`PairedResult.table`: `b01` counts a-miss -> b-hit pairs (`flips_gained`, sorted case ids),
`b10` a-hit -> b-miss (`flips_lost`); `delta` = rate_b - rate_a; rates are null without
pairs; `n_undecided`: cases scored on both sides, the metric null on one (no pair)."""
PAIRED_SCHEMA: dict[str, pl.DataType] = PAIRED.schema()

SHIFT_RENAMES = {
    "rate_a": "rate_baseline",
    "rate_b": "rate_variant",
    "n_unpaired_a": "n_unpaired_baseline",
    "n_unpaired_b": "n_unpaired_variant",
}
SHIFT = PAIRED.derive("shift", 2, (Column("model"), Column("variant")), SHIFT_RENAMES)
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
    """One metric compared between selections `a` and `b`: one row per group (by default
    (benchmark, category))."""

    a: dict[str, Any]
    b: dict[str, Any]
    metric: str
    table: pl.DataFrame = field(repr=False)


def _column(per_case: pl.DataFrame, metric: str, keys: Sequence[str]) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {sorted(METRICS)}")
    column = METRICS[metric]
    missing = sorted({column, "scored", *keys} - set(per_case.columns))
    if missing:
        raise ValueError(f"per-case table lacks column(s) {missing}")
    return column


def _side(per_case: pl.DataFrame, where: Mapping[str, Any], column: str, name: str,
          keys: Sequence[str], undecidable: bool) -> pl.DataFrame:
    """The selected rows as the keys, in_<name>, scored_<name>, hit_<name> (null: undecided)."""
    if not where:
        raise ValueError(f"selection {name} is empty")
    unknown = sorted(set(where) - set(per_case.columns))
    if unknown:
        raise ValueError(f"selection {name} names unknown column(s) {unknown}")
    rows = per_case.filter(*(pl.col(key) == value for key, value in where.items()))
    dupes = rows.filter(pl.struct(keys).is_duplicated())
    if dupes.height:
        first = dupes.sort(keys).row(0, named=True)
        raise ValueError(
            f"selection {name}={dict(where)} matches several rows per case (e.g. "
            f"{'/'.join(str(first[key]) for key in keys)}); select one group"
        )
    scored = pl.col("scored").fill_null(False)
    if not undecidable:
        hits = rows.filter(scored & pl.col(column).is_null())
        if hits.height:
            raise ValueError(f"selection {name}: {hits.height} scored case(s) have null {column}")
    return rows.select(
        *keys,
        pl.lit(True).alias(f"in_{name}"),
        scored.alias(f"scored_{name}"),
        pl.col(column).cast(pl.Boolean).alias(f"hit_{name}"),
    )


def _flips(mask: pl.Expr) -> pl.Expr:
    return pl.col("case_id").filter(mask).sort().str.join(FLIP_SEP)


def _rate(k: int, n: int) -> float | None:
    return round(k / n, DIGITS) if n else None


def paired(
    per_case: pl.DataFrame, *, a: Mapping[str, Any], b: Mapping[str, Any], metric: str,
    keys: Sequence[str] = PAIR_KEYS, groups: Sequence[str] = GROUP_KEYS,
) -> PairedResult:
    """Compare `metric` between the rows selected by `a` and by `b` (column -> value) on the
    cases (`keys`, holding `case_id`) scored in both, per value of `groups` (a part of
    `keys`), with exact McNemar on the discordant pairs; the table's columns:
    `paired_spec(..., groups)`."""
    keys, groups = list(keys), list(groups)
    if "case_id" not in keys or not set(groups) <= set(keys):
        raise ValueError(f"paired: keys {keys} must hold case_id and the groups {groups}")
    column = _column(per_case, metric, keys)
    undecidable = metric in DECIDABLE  # may be null (undecided): `n_undecided`; else an error
    joined = _side(per_case, a, column, "a", keys, undecidable).join(
        _side(per_case, b, column, "b", keys, undecidable), on=keys, how="full", coalesce=True
    )
    in_a, in_b = pl.col("in_a").fill_null(False), pl.col("in_b").fill_null(False)
    both = in_a & in_b & pl.col("scored_a").fill_null(False) & pl.col("scored_b").fill_null(False)
    pair = both & pl.col("hit_a").is_not_null() & pl.col("hit_b").is_not_null()
    hit_a, hit_b = pl.col("hit_a").fill_null(False), pl.col("hit_b").fill_null(False)
    counts = joined.group_by(groups).agg(
        n_pairs=pair.sum().cast(pl.Int64),
        k_a=(pair & hit_a).sum().cast(pl.Int64),
        k_b=(pair & hit_b).sum().cast(pl.Int64),
        b01=(pair & ~hit_a & hit_b).sum().cast(pl.Int64),
        b10=(pair & hit_a & ~hit_b).sum().cast(pl.Int64),
        flips_gained=_flips(pair & ~hit_a & hit_b),
        flips_lost=_flips(pair & hit_a & ~hit_b),
        n_unpaired_a=(in_a & ~both).sum().cast(pl.Int64),
        n_unpaired_b=(in_b & ~both).sum().cast(pl.Int64),
        n_undecided=(both & ~pair).sum().cast(pl.Int64),
    )
    spec = paired_spec("paired", PAIRED.schema_version, groups)
    rows = []
    for row in counts.sort(groups).iter_rows(named=True):
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
    table = pl.DataFrame([{name: row[name] for name in spec.names} for row in rows],
                         schema=spec.schema())
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
