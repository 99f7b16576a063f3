"""One cell's number recomputed from its per-case rows: the cell's row of the triples, the
metric's name resolved, and the case ids of its numerator and denominator."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from toolcalib.metrics.counts import COUNTED, SCORED
from toolcalib.metrics.rows import DIGITS, OWN_DENOMINATOR, RATES, STRUCTURAL
from toolcalib.metrics.wilson import wilson
from toolcalib.provenance.lock import ProvenanceError

KEYS = ("model", "variant", "benchmark", "category")
PLURAL = {"model": "models", "variant": "variants", "benchmark": "benchmarks",
          "category": "categories"}
TRIPLES = "results/metrics/triples.csv"
PER_CASE = "results/metrics/per_case.parquet"
IN_DENOMINATOR = {**dict.fromkeys(OWN_DENOMINATOR, "decided: no output the record did not "
                                                   "keep could hold the gold class"),
                  STRUCTURAL: "the published structural reading"}
"""What a case in the denominator of a rate of `OWN_DENOMINATOR` has."""


def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort key reading digit runs as numbers (`x_2` before `x_10`); ties broken by the text."""
    parts = re.split(r"(\d+)", text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def key_text(cell: Sequence[str]) -> str:
    return "/".join(cell)


def metrics_of(columns: Sequence[str]) -> list[str]:
    """The auditable metrics of a triples table: its rates (the structural reading last),
    then its counts."""
    rates = [rate for rate in [*RATES, STRUCTURAL] if rate in columns and f"{rate}_k" in columns]
    return rates + [count for count in COUNTED if count in columns]


def resolve_metric(name: str, columns: Sequence[str]) -> str:
    """`name` as an auditable metric (`gar_k`, `gar_lo`, `gar_hi` mean `gar`)."""
    valid = metrics_of(columns)
    base = re.sub(r"_(k|lo|hi)$", "", name) if name not in valid else name
    if base not in valid:
        raise ProvenanceError(f"unknown metric {name!r}; metrics: {', '.join(valid)}")
    return base


def cell_row(triples: pl.DataFrame, cell: tuple[str, str, str, str],
              gold: str | None = None) -> dict[str, Any]:
    """The cell's row of the triples (of gold class `gold`, required where the cell has
    several); an unknown cell or gold class names the valid values."""
    rows = triples
    for key, value in zip(KEYS, cell, strict=True):
        narrowed = rows.filter(pl.col(key) == value)
        if narrowed.height == 0:
            within = "" if rows is triples else f" (with {key_text(cell[:KEYS.index(key)])})"
            options = "; ".join(
                f"{PLURAL[name]}: "
                f"{', '.join(sorted(set(triples[name].to_list()), key=natural_key))}"
                for name in KEYS
            )
            raise ProvenanceError(
                f"no cell {key_text(cell)} in {TRIPLES}: unknown {key} {value!r}{within}, "
                f"valid: {', '.join(sorted(set(rows[key].to_list()), key=natural_key))}; "
                f"{options}; metrics: {', '.join(metrics_of(triples.columns))}"
            )
        rows = narrowed
    golds = sorted(rows["gold_action"].to_list())
    if gold is not None:
        rows = rows.filter(pl.col("gold_action") == gold)
        if rows.height == 0:
            raise ProvenanceError(f"no gold class {gold!r} in cell {key_text(cell)} of {TRIPLES}, "
                             f"valid: {', '.join(golds)}")
    if rows.height > 1:
        raise ProvenanceError(f"cell {key_text(cell)} has {rows.height} gold classes in {TRIPLES}"
                         f" ({', '.join(golds)}): choose one with --gold")
    return rows.row(0, named=True)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return round(a, DIGITS) == round(b, DIGITS)


def recompute(per_case: pl.DataFrame, cell: tuple[str, str, str, str], metric: str,
              row: dict[str, Any], gold: str | None = None) -> dict[str, Any]:
    """The metric recomputed from the cell's per-case rows (of gold class `gold`, if given),
    next to the table's values."""
    rows = per_case.filter(
        pl.all_horizontal(pl.col(k) == v for k, v in zip(KEYS, cell, strict=True))
    )
    if gold is not None:
        rows = rows.filter(pl.col("gold_action") == gold)

    def ids(selection: pl.Expr) -> list[str]:
        picked = rows.filter(selection.fill_null(False))["case_id"].to_list()
        return sorted(picked, key=natural_key)

    problems: list[str] = []
    if metric in RATES or metric == STRUCTURAL:
        # a rate over its own denominator (`<rate>_n`, where the table has one): the scored
        # cases where its column is not null (decided; with a structural reading)
        own = metric in OWN_DENOMINATOR and f"{metric}_n" in row
        column = RATES.get(metric) or OWN_DENOMINATOR[metric]
        among = SCORED & pl.col(column).is_not_null() if own else SCORED
        numerator, denominator = ids(among & pl.col(column)), ids(among)
        k, n = len(numerator), len(denominator)
        value = round(k / n, DIGITS) if n else None
        low, high = (None if x is None else round(x, DIGITS) for x in wilson(k, n))
        table = {"value": row[metric], "k": row[f"{metric}_k"],
                 "n": row[f"{metric}_n" if own else "n"],
                 "lo": row[f"{metric}_lo"], "hi": row[f"{metric}_hi"]}
        mine = {"value": value, "k": k, "n": n, "lo": low, "hi": high}
        for name in ("k", "n", "value", "lo", "hi"):
            if not _same(mine[name], table[name]):
                problems.append(f"{metric}: recomputed {name} {mine[name]} != table "
                                f"{table[name]} at {key_text(cell)}")
        definition = (f"{metric} = {metric}_k / {metric}_n: share of the scored cases with "
                      f"a `{column}` ({IN_DENOMINATOR[metric]}) where it is true" if own else
                      f"{metric} = {metric}_k / n: share of scored cases whose per-case "
                      f"`{column}` is true")
        return {
            "name": metric, "kind": "rate", "per_case_column": column,
            "definition": definition, "table": table, "recomputed": mine,
            "matches": not problems, "problems": problems,
            "numerator_cases": numerator, "denominator_cases": denominator,
        }
    description, selection = COUNTED[metric]
    counted, population = ids(selection), ids(pl.lit(True))
    if len(counted) != row[metric]:
        problems.append(f"{metric}: recomputed {len(counted)} != table {row[metric]} at "
                        f"{key_text(cell)}")
    return {
        "name": metric, "kind": "count", "per_case_column": None,
        "definition": f"{metric}: {description}",
        "table": {"value": row[metric]},
        "recomputed": {"value": len(counted), "k": len(counted), "n": len(population)},
        "matches": not problems, "problems": problems,
        "numerator_cases": counted, "denominator_cases": population,
    }
