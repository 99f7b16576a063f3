"""(GAR, TER, Acc) per (model, variant, benchmark, category), with counts and Wilson intervals."""

from __future__ import annotations

import polars as pl

from toolcalib.metrics.rows import TRIPLES, triple_rows

TRIPLE_SCHEMA: dict[str, pl.DataType] = TRIPLES.schema()
"""The columns of the triples table, in order, typed."""


def triples(cases: pl.DataFrame) -> pl.DataFrame:
    """`triple_rows` of a per-case table, as a typed frame."""
    return pl.DataFrame(triple_rows(cases.iter_rows(named=True)), schema=TRIPLE_SCHEMA)
