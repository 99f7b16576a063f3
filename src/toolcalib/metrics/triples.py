"""(GAR, TER, Acc) per (model, variant, benchmark, category), with counts and Wilson intervals."""

from __future__ import annotations

import polars as pl

from toolcalib.metrics.rows import (
    COUNTS,
    KEYS,
    STRUCTURAL,
    TRIPLE_COLUMNS,
    TURN_COUNTS,
    triple_rows,
)

TRIPLE_SCHEMA: dict[str, pl.DataType] = {
    name: pl.String() if name in (*KEYS, "gold_action") else
    pl.Int64() if name in (*COUNTS, *TURN_COUNTS, f"{STRUCTURAL}_n") or name.endswith("_k") else
    pl.Float64()
    for name in TRIPLE_COLUMNS
}
"""The columns of the triples table, in order; `<rate>_k` is the numerator of `<rate>`."""


def triples(cases: pl.DataFrame) -> pl.DataFrame:
    """`triple_rows` of a per-case table, as a typed frame."""
    return pl.DataFrame(triple_rows(cases.iter_rows(named=True)), schema=TRIPLE_SCHEMA)
