"""Aggregate actions, scores and cases, and write every metrics artifact deterministically."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from toolcalib.jsonio import atomic_write_bytes, write_json
from toolcalib.metrics.confusion import confusion
from toolcalib.metrics.inputs import Rows, action_table, concat
from toolcalib.metrics.markdown import triples_markdown
from toolcalib.metrics.paired import shift_table
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.published import published_table
from toolcalib.metrics.rows import (
    CASE_KEYS,
    CASES,
    DIGITS,
    KEYS,
    TRIPLE_COLUMNS,
    csv_bytes,
    triple_rows,
)
from toolcalib.metrics.spec import TableSpec
from toolcalib.metrics.triples import TRIPLE_SCHEMA

FILES = ("triples.csv", "confusion.csv", "per_case.parquet", "metrics.json", "triples.md",
         "shift.csv", "published.csv")
"""What aggregation writes, over every run."""


def metrics_tree(table: pl.DataFrame) -> dict[str, Any]:
    """{model: {variant: {benchmark: {category: {metric: value}}}}} of the triples."""
    tree: dict[str, Any] = {}
    for row in table.iter_rows(named=True):
        node = tree
        for key in KEYS[:-1]:
            node = node.setdefault(row[key], {})
        node[row[KEYS[-1]]] = {name: value for name, value in row.items() if name not in KEYS}
    return tree


def _csv(frame: pl.DataFrame) -> bytes:
    return frame.write_csv(float_precision=DIGITS).encode("utf-8")


def parquet_bytes(frame: pl.DataFrame, spec: TableSpec) -> bytes:
    """`frame` as Parquet, `spec`'s name and `schema_version` in its key-value metadata."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, metadata=spec.metadata())
    return buffer.getvalue()


def write_outputs(
    out_dir: str | Path, actions: Rows, case_tables: Sequence[pl.DataFrame],
    records: Sequence[pl.DataFrame] = (),
) -> dict[str, Path]:
    """Write FILES under `out_dir` (rows sorted, no timestamps) and return their paths.

    `case_tables`: per-case tables of runs (each written by its `evaluate` job), each case in
    one of them; a run, or all of them, may have no case (a category empty after `limit`).
    `triples.csv` has the bytes of a run's own triples (`csv_bytes`); `records`: the
    published runs' records tables, behind `published.csv` (`metrics.published`).
    """
    out = Path(out_dir)
    actions = action_table(actions)
    case_table = concat(case_tables, CASE_SCHEMA).sort(CASE_KEYS)
    rows = triple_rows(case_table.iter_rows(named=True))
    triple_table = pl.DataFrame(rows, schema=TRIPLE_SCHEMA)
    atomic_write_bytes(out / "triples.csv", csv_bytes(rows, TRIPLE_COLUMNS))
    atomic_write_bytes(out / "confusion.csv", _csv(confusion(actions, case_table)))
    atomic_write_bytes(out / "per_case.parquet", parquet_bytes(case_table, CASES))
    write_json(out / "metrics.json", metrics_tree(triple_table))
    atomic_write_bytes(out / "triples.md", triples_markdown(triple_table).encode("utf-8"))
    atomic_write_bytes(out / "shift.csv", _csv(shift_table(case_table)))
    atomic_write_bytes(out / "published.csv", _csv(published_table(records, case_table)))
    return {name: out / name for name in FILES}
