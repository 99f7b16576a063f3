"""The three inputs of aggregation as typed tables: actions, scores and the cases' gold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

from toolcalib.jsonio import InputError
from toolcalib.metrics.rows import GOLD_COLUMNS, gold_rows
from toolcalib.metrics.spec import TableSpec
from toolcalib.records import ACTION_COLUMNS

if TYPE_CHECKING:
    from toolcalib.records import ActionRow, Case

ACTION_SCHEMA: dict[str, pl.DataType] = {
    name: pl.Int64() if name in ("turn", "step", "probes_fired") else
    pl.Boolean() if name in ("scored", "is_gold_turn") else pl.String()
    for name in ACTION_COLUMNS
}
"""The columns of an action table, in order, typed."""
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
    name: pl.Int64() if name == "gold_turn" else pl.String() for name in GOLD_COLUMNS
}

Rows = pl.DataFrame | Iterable["msgspec.Struct | Mapping[str, Any]"]
Cases = pl.DataFrame | Iterable["Case"]


def table(rows: Rows, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The schema's columns, in order and cast, of a table or of records/dicts."""
    if isinstance(rows, pl.DataFrame):
        missing = sorted(set(schema) - set(rows.columns))
        if missing:
            raise ValueError(f"table lacks column(s) {missing}")
        return rows.select(pl.col(name).cast(dtype) for name, dtype in schema.items())
    dicts = [row if isinstance(row, Mapping) else msgspec.structs.asdict(row) for row in rows]
    return pl.DataFrame([{name: d[name] for name in schema} for d in dicts], schema=schema)


def actions_frame(rows: Sequence[ActionRow | Mapping[str, Any]]) -> pl.DataFrame:
    """Action rows (records or `action_rows` dicts) as a table with a fixed schema (also
    when empty)."""
    return table(rows, ACTION_SCHEMA)


def action_table(actions: Rows) -> pl.DataFrame:
    return table(actions, ACTION_SCHEMA)


def score_table(scores: Rows) -> pl.DataFrame:
    return table(scores, SCORE_SCHEMA)


def gold_table(cases: Cases) -> pl.DataFrame:
    """benchmark, case_id, gold_action, gold_turn of each case."""
    if isinstance(cases, pl.DataFrame):
        return table(cases, GOLD_SCHEMA)
    return table(gold_rows(cases), GOLD_SCHEMA)


def read_table(path: str | Path, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A JSON-lines table written by `evaluate` (`rows.jsonl_bytes`), typed by `schema`."""
    return pl.read_ndjson(path, schema=schema)


def read_csv_table(path: str | Path, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A CSV table written by aggregation, typed by `schema` (its columns, in order): a header
    with no rows, or a column with no value, keeps its type instead of becoming text."""
    frame = pl.read_csv(path, schema_overrides=schema)
    if frame.columns != list(schema):
        raise InputError(f"{path}: columns {frame.columns}, expected {list(schema)}")
    return frame


def read_parquet_table(path: str | Path, spec: TableSpec) -> pl.DataFrame:
    """A Parquet table written by aggregation (`write.parquet_bytes`), once its metadata says
    it is `spec`'s table at its `schema_version` and its columns are `spec`'s."""
    frame = pl.read_parquet(path)
    spec.check(str(path), frame.columns, pl.read_parquet_metadata(path))
    return frame


def concat(frames: Sequence[pl.DataFrame], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The frames one after another, typed by `schema`; none at all: an empty table."""
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical").cast(pl.Schema(schema))
