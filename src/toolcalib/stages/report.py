"""Stage: the self-contained HTML report and its markdown summary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import polars as pl

from toolcalib.metrics.confusion import CONFUSION_SCHEMA
from toolcalib.metrics.inputs import read_csv_table, read_parquet_table
from toolcalib.metrics.leaderboard import FILE as LEADERBOARD_FILE
from toolcalib.metrics.leaderboard import LEADERBOARD_SCHEMA
from toolcalib.metrics.paired import SHIFT_SCHEMA
from toolcalib.metrics.pairs import FILES as PAIR_FILES
from toolcalib.metrics.pairs import FLIPS, PAIRS
from toolcalib.metrics.published import (
    PUBLISHED_SCHEMA,
    RECORDED_FILE,
    RECORDED_SCHEMA,
    failed_imports,
    read_imports,
)
from toolcalib.metrics.rows import CASES
from toolcalib.metrics.triples import TRIPLE_SCHEMA
from toolcalib.report import ReportTables, build_report
from toolcalib.stages import Arg, log


def run(metrics_dir: str, out_dir: str,
        validation: Annotated[str | None, Arg("classifier validation table (CSV)")] = None,
        policies: Annotated[str | None, Arg(
            "JSON: the reference policies' model names and kinds (default: models named "
            "policy-<kind>)")] = None,
        validation_summary: Annotated[str | None, Arg(
            "classifier validation summary per profile and source (CSV)")] = None,
        imports: Annotated[Sequence[str], Arg(
            "the published runs' import statuses (import-run --out-status): the failed ones "
            "are listed first")] = ()) -> None:
    """Every table is read with its schema: one with no row (no scored case anywhere, no
    variant) or with a column of nulls only (no cell with n > 0) keeps its types. `policies`:
    JSON object, reference policy model name -> policy kind (the self-check's invariants);
    `imports`: the published runs' import statuses (`import-run --out-status`), the failed ones
    listed first ("Imports that failed")."""
    metrics = Path(metrics_dir)
    failures = failed_imports(read_imports(imports))
    triples = read_csv_table(metrics / "triples.csv", TRIPLE_SCHEMA)
    confusion = read_csv_table(metrics / "confusion.csv", CONFUSION_SCHEMA)
    per_case = read_parquet_table(metrics / "per_case.parquet", CASES)
    shift = read_csv_table(metrics / "shift.csv", SHIFT_SCHEMA)
    checks = pl.read_csv(validation, infer_schema_length=None) if validation else None
    overall = (pl.read_csv(validation_summary, infer_schema_length=None)
               if validation_summary else None)
    table = metrics / "published.csv"
    published = read_csv_table(table, PUBLISHED_SCHEMA) if table.exists() else None
    headlines = metrics / RECORDED_FILE
    recorded = read_csv_table(headlines, RECORDED_SCHEMA) if headlines.exists() else None
    board = metrics / LEADERBOARD_FILE  # the page opens on it where aggregation wrote one
    leaderboard = read_csv_table(board, LEADERBOARD_SCHEMA) if board.exists() else None
    pairs, pair_flips = (  # the config's model-vs-model pairs, where aggregation wrote them
        (read_csv_table(metrics / name, spec.schema()) if (metrics / name).exists() else None)
        for name, spec in zip(PAIR_FILES, (PAIRS, FLIPS), strict=True))
    tables = ReportTables(triples, confusion, per_case, shift=shift if shift.height else None,
                          validation=checks, validation_summary=overall, published=published,
                          leaderboard=leaderboard, pairs=pairs, pair_flips=pair_flips,
                          recorded=recorded,
                          import_failures=failures if failures.height else None,
                          policies=json.loads(policies) if policies is not None else None)
    path = build_report(tables, out_dir)
    log(f"report of {triples.height} triples ({failures.height} failed imports listed) -> "
        f"{path}")
