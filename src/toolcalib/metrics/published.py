"""The published runs' table: every record a published run's files hold, what became of it
(scored, excluded, or no cell), its recorded reward beside the recomputed verdict and the named
cause of each disagreement; and one agreement line per file (report, `toolcalib audit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.records import Published

PUBLISHED = TableSpec("published", 1, (
    Column("model"), Column("benchmark"), Column("category"), Column("file"),
    Column("index", "int"), Column("record"), Column("claimed_case"), Column("case_id"),
    Column("status"), Column("recorded_reward", "float"), Column("reward", "float"),
    Column("agrees", "bool"), Column("note"), Column("differences", "int"),
))
"""The published-runs table (`published.csv`), one row per record, in file order. `status`:
`scored`, `excluded` (its case counted in `n_excluded`) or `no cell` (no task to score it on);
`reward`: the recomputed verdict (1 passed, 0 failed); `note`: why it is excluded, how it was
paired, or why the recorded reward differs."""
PUBLISHED_SCHEMA: dict[str, pl.DataType] = PUBLISHED.schema()
RECORDS = TableSpec("records", 1, tuple(
    PUBLISHED.column(name) if name in PUBLISHED.names else Column(name)
    for name in ["model", "benchmark", "category", "file", "index", "record", "claimed_case",
                 "case_id", "pairing", "excluded", "recorded_reward", "differences"]))
"""An import's records table (`<category>.records.jsonl`, `record_rows`): its columns typed as
`PUBLISHED`'s, `pairing` and `excluded` text."""
RECORD_COLUMNS = RECORDS.names
RECORD_SCHEMA: dict[str, pl.DataType] = RECORDS.schema()


def record_rows(model: str, benchmark: str, category: str,
                records: Iterable[Published]) -> list[dict[str, Any]]:
    """An import's records as rows of `RECORDS`."""
    return [RECORDS.row({
        "model": model, "benchmark": benchmark, "category": category, "file": r.file,
        "index": r.index, "record": r.record, "claimed_case": r.claimed_case,
        "case_id": r.case_id, "pairing": r.pairing, "excluded": r.excluded,
        "recorded_reward": r.recorded.get("reward"), "differences": len(r.differences)})
        for r in records]


def published_table(records: Sequence[pl.DataFrame], cases: pl.DataFrame) -> pl.DataFrame:
    """Every record with its fate, joined with the per-case table's verdict of its case."""
    if not records:
        return pl.DataFrame(schema=PUBLISHED_SCHEMA)
    table = pl.concat([frame.cast(RECORD_SCHEMA) for frame in records])  # type: ignore[arg-type]
    verdicts = cases.filter(pl.col("recorded_reward").is_not_null()
                            | pl.col("reward_disagreement").is_not_null()).select(
        "model", "benchmark", "category", "case_id", "scored", "passed",
        "reward_disagreement").unique(["model", "benchmark", "category", "case_id"])
    joined = table.join(verdicts, on=["model", "benchmark", "category", "case_id"],
                        how="left")
    reward = pl.when(pl.col("scored")).then(pl.col("passed").cast(pl.Float64))
    status = (pl.when(pl.col("case_id").is_null()).then(pl.lit("no cell"))
              .when(pl.col("scored")).then(pl.lit("scored")).otherwise(pl.lit("excluded")))
    note = (pl.when(pl.col("case_id").is_null() | ~pl.col("scored").fill_null(False))
            .then(pl.col("excluded"))
            .otherwise(pl.coalesce("reward_disagreement", "pairing")))
    return (joined.with_columns(reward.alias("reward"), status.alias("status"),
                                note.alias("note"))
            .with_columns((pl.col("reward") == pl.col("recorded_reward")).alias("agrees"))
            .select(PUBLISHED.names).sort("model", "benchmark", "file", "index"))


def file_lines(table: pl.DataFrame) -> list[str]:
    """One agreement line per (model, file): records, scored, excluded, mean rewards (recorded
    over every record with one, both over the scored), agreements."""
    lines = []
    for (model, benchmark, file), rows in table.group_by(
            "model", "benchmark", "file", maintain_order=True):
        scored = rows.filter(pl.col("status") == "scored")
        recorded_all = rows["recorded_reward"].drop_nulls()
        lines.append(
            f"{model} · {benchmark} · {file}: {rows.height} records, {scored.height} scored, "
            f"{rows.filter(pl.col('status') == 'excluded').height} excluded, "
            f"{rows.filter(pl.col('status') == 'no cell').height} without a cell; mean reward "
            f"recorded {_mean(recorded_all)} (all), {_mean(scored['recorded_reward'])} vs "
            f"recomputed {_mean(scored['reward'])} (scored); agree on "
            f"{int(scored['agrees'].sum() or 0)} of {scored.height}")
    return lines


def disagreements(table: pl.DataFrame) -> pl.DataFrame:
    """The scored records whose recorded reward the scorer contradicts, and the excluded ones,
    with their notes."""
    return table.filter(((pl.col("status") == "scored") & ~pl.col("agrees").fill_null(False))
                        | (pl.col("status") != "scored")).select(
        "model", "file", "index", "case_id", "status", "recorded_reward", "reward", "note")


def _mean(values: pl.Series) -> str:
    mean = values.drop_nulls().mean()  # None when no value is left
    return f"{mean:.3f}" if isinstance(mean, int | float) else "–"

