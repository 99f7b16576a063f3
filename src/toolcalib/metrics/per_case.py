"""The per-case table behind every triple: one row per (model, variant, benchmark, case)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from toolcalib.metrics.inputs import Cases, Rows, action_table, gold_table, score_table
from toolcalib.metrics.rows import CASES, case_rows

CASE_SCHEMA: dict[str, pl.DataType] = CASES.schema()
"""The columns of a per-case table, in order, typed."""


def per_case(actions: Rows, scores: Rows, cases: Cases,
             structural: Mapping[tuple[Any, ...], Mapping[str, bool | None]] | None = None
             ) -> pl.DataFrame:
    """`case_rows` of tables or records, as a typed frame."""
    rows = case_rows(action_table(actions).iter_rows(named=True),
                     score_table(scores).iter_rows(named=True),
                     gold_table(cases).iter_rows(named=True), structural)
    return pl.DataFrame(rows, schema=CASE_SCHEMA)
