"""The three inputs of aggregation as typed tables: actions, scores and the cases' gold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl
from pydantic import BaseModel

from toolcalib.classify.trajectory import ACTION_SCHEMA
from toolcalib.records import Case

KEYS = ["model", "variant", "benchmark", "category"]
"""One triple per value of these columns, in this sort order."""
CASE_KEYS = [*KEYS, "case_id"]

SCORE_SCHEMA: dict[str, pl.DataType] = {
    "case_id": pl.String(),
    "model": pl.String(),
    "variant": pl.String(),
    "benchmark": pl.String(),
    "category": pl.String(),
    "scored": pl.Boolean(),
    "passed": pl.Boolean(),
    "error_type": pl.String(),
}
GOLD_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String(),
    "case_id": pl.String(),
    "gold_action": pl.String(),
    "gold_turn": pl.Int64(),
}

Rows = pl.DataFrame | Iterable[BaseModel | Mapping[str, Any]]
Cases = pl.DataFrame | Iterable[Case]


def table(rows: Rows, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The schema's columns, in order and cast, of a table or of records/dicts."""
    if isinstance(rows, pl.DataFrame):
        missing = sorted(set(schema) - set(rows.columns))
        if missing:
            raise ValueError(f"table lacks column(s) {missing}")
        return rows.select(pl.col(name).cast(dtype) for name, dtype in schema.items())
    dicts = [row.model_dump() if isinstance(row, BaseModel) else row for row in rows]
    return pl.DataFrame([{name: d[name] for name in schema} for d in dicts], schema=schema)


def action_table(actions: Rows) -> pl.DataFrame:
    return table(actions, ACTION_SCHEMA)


def score_table(scores: Rows) -> pl.DataFrame:
    return table(scores, SCORE_SCHEMA)


def gold_table(cases: Cases) -> pl.DataFrame:
    """benchmark, case_id, gold_action, gold_turn of each case."""
    if isinstance(cases, pl.DataFrame):
        return table(cases, GOLD_SCHEMA)
    return table(
        [
            {
                "benchmark": c.benchmark,
                "case_id": c.id,
                "gold_action": c.gold_action,
                "gold_turn": c.gold_turn,
            }
            for c in cases
        ],
        GOLD_SCHEMA,
    )
