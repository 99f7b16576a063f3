"""The classifier's validation tables (`classifier_validation.csv`, `classifier_summary.csv`):
the scores `classify.validation` computes per profile and source group, as their specs' rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import polars as pl

from toolcalib.metrics.spec import Column, TableSpec

_SCHEMA_VERSION = Column("schema_version", "int")
"""Each validation CSV carries its table's `schema_version` as its first column (CSV has no
metadata slot)."""
VALIDATION = TableSpec("classifier_validation", 2, (
    _SCHEMA_VERSION, Column("profile"), Column("source"), Column("class"),
    Column("precision", "float"), Column("recall", "float"), Column("f1", "float"),
    Column("kappa", "float"), Column("support", "int"),
))
"""Per profile, source group and class (`classifier_validation.csv`; version 2: `source`,
`kappa`)."""
SUMMARY = TableSpec("classifier_summary", 2, (
    _SCHEMA_VERSION, Column("profile"), Column("source"), Column("n", "int"),
    Column("accuracy", "float"), Column("macro_f1", "float"), Column("kappa", "float"),
))
"""Per profile and source group (`classifier_summary.csv`; version 2: `source`)."""


def validation_frames(scores: Iterable[Mapping[str, object]],
                      summaries: Iterable[Mapping[str, object]]) -> tuple[pl.DataFrame,
                                                                           pl.DataFrame]:
    """The long per-class table and the per-profile summary of
    `classify.validation.validation_scores`' rows."""
    return _frame(VALIDATION, scores), _frame(SUMMARY, summaries)


def _frame(spec: TableSpec, rows: Iterable[Mapping[str, object]]) -> pl.DataFrame:
    return pl.DataFrame([spec.row({"schema_version": spec.schema_version, **row}) for row in rows],
                        schema=spec.schema())
