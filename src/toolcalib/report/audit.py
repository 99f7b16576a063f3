"""Anchor ids of the triples' numbers and the case ids behind each of them."""

from __future__ import annotations

import re
from collections import Counter

import polars as pl

from toolcalib.jsonio import InputError
from toolcalib.metrics.counts import BOUNDS, COUNTED, SCORED
from toolcalib.metrics.rows import CELL_KEYS, RATES, STRUCTURAL

Key = tuple[str, ...]
"""The (model, variant, benchmark, category) of a triple."""

AUDITED: dict[str, tuple[str, pl.Expr]] = {
    **{count: entry for count, entry in COUNTED.items() if count not in BOUNDS},
    **{
        rate: (f"numerator: scored cases with {column}", SCORED & pl.col(column))
        for rate, column in RATES.items()
    },
    **{count: COUNTED[count] for count in BOUNDS},
    STRUCTURAL: ("numerator: scored cases the published structural reading counts as a hit "
                 "(τ²; not GAR)", SCORED & pl.col("structural_hit")),
}
"""Every auditable number of a triple: what its cases are and which per-case rows they are."""


def audited(columns: list[str]) -> dict[str, tuple[str, pl.Expr]]:
    """The AUDITED numbers a triples table with these columns has."""
    return {metric: entry for metric, entry in AUDITED.items() if count_column(metric) in columns}


def natural(case_id: str) -> tuple[object, ...]:
    """Sort key reading digit runs as numbers (`x_2` before `x_10`), ties broken by the id."""
    parts = re.split(r"(\d+)", case_id)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), case_id


def count_column(metric: str) -> str:
    """The triples column holding the size of `metric`'s case list."""
    return f"{metric}_k" if metric in RATES or metric == STRUCTURAL else metric


def slugs(keys: list[Key]) -> dict[Key, str]:
    """A readable, page-unique id fragment per cell key (`-`-joined, the gold class only where
    the rest of the key has several (a τ² domain); a clash gets `~2`, `~3`...)."""
    out: dict[Key, str] = {}
    seen: set[str] = set()
    prefixes = Counter(key[:-1] for key in keys)
    for key in keys:
        shown = key if prefixes[key[:-1]] > 1 else key[:-1]
        base = "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", part) for part in shown)
        slug, number = base, 1
        while slug in seen:
            number += 1
            slug = f"{base}~{number}"
        seen.add(slug)
        out[key] = slug
    return out


def cell_id(slug: str, metric: str) -> str:
    return f"cell-{slug}-{metric}"


def audit_id(slug: str, metric: str) -> str:
    return f"audit-{slug}-{metric}"


def case_lists(triples: pl.DataFrame, per_case: pl.DataFrame) -> dict[Key, dict[str, list[str]]]:
    """The sorted case ids behind every audited number, checked against the triples' counts."""
    metrics = audited(triples.columns)
    if "structural_hit" not in per_case.columns:  # a table from before the column: no reading
        per_case = per_case.with_columns(pl.lit(None, pl.Boolean()).alias("structural_hit"))
    grouped = per_case.group_by(CELL_KEYS).agg(
        pl.col("case_id").filter(expr.fill_null(False)).alias(metric)
        for metric, (_, expr) in metrics.items()
    )
    lists = {
        tuple(row[k] for k in CELL_KEYS): {
            metric: sorted(row[metric], key=natural) for metric in metrics
        }
        for row in grouped.iter_rows(named=True)
    }
    empty: dict[str, list[str]] = {metric: [] for metric in metrics}
    out = {}
    for row in triples.iter_rows(named=True):
        key = tuple(row[k] for k in CELL_KEYS)
        found = lists.get(key, empty)
        for metric in metrics:
            if len(found[metric]) != row[count_column(metric)]:
                raise InputError(
                    f"per-case table disagrees with the triples at {'/'.join(key)} {metric}: "
                    f"{len(found[metric])} case(s) vs {row[count_column(metric)]}"
                )
        out[key] = found
    return out
