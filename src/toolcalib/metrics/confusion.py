"""Gold x emitted action-class counts, long and rectangular, over scored cases."""

from __future__ import annotations

import polars as pl

from toolcalib.metrics.inputs import Rows, action_table
from toolcalib.metrics.rows import CASE_KEYS, KEYS
from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.records import ACTION_CLASSES, GOLD_CLASSES

NO_CLASS = "none"
"""The emitted value of a turn with no class (nothing emitted, or never reached)."""
LEVELS = ("gold_turn", "all_turns")
"""`gold_turn`: each case's gold-turn gold vs that turn's class; `all_turns`: every turn."""
EMITTED = (*ACTION_CLASSES, NO_CLASS)
CONFUSION = TableSpec("confusion", 1, (
    *(Column(key) for key in [*KEYS, "level", "gold", "emitted"]), Column("count", "int")))
"""The confusion table (`confusion.csv`; empty when no case is scored)."""
CONFUSION_SCHEMA: dict[str, pl.DataType] = CONFUSION.schema()
COLUMNS = [name for name in CONFUSION.names if name != "count"]
"""What a count is counted by."""


def confusion(actions: Rows, cases: pl.DataFrame) -> pl.DataFrame:
    """Counts for every gold class present in a group x every emitted class (zeros included).

    `cases` is the per-case table: only its scored cases count.
    """
    scored = cases.filter("scored").select(CASE_KEYS)
    turns = (
        action_table(actions)
        .filter(pl.col("level") == "turn")
        .join(scored, on=CASE_KEYS, how="semi")
        .select(
            *KEYS,
            "is_gold_turn",
            gold=pl.col("gold_action"),
            emitted=pl.col("action").fill_null(NO_CLASS),
        )
    )
    long = pl.concat(
        [
            turns.filter("is_gold_turn").with_columns(level=pl.lit(LEVELS[0])),
            turns.with_columns(level=pl.lit(LEVELS[1])),
        ]
    )
    counts = long.group_by(COLUMNS).agg(count=pl.len().cast(pl.Int64))
    grid = (
        long.select(*KEYS, "level", "gold")
        .unique()
        .join(pl.DataFrame({"emitted": EMITTED}), how="cross")
    )
    order = {
        "level": pl.Enum(LEVELS),
        "gold": pl.Enum(GOLD_CLASSES),
        "emitted": pl.Enum(EMITTED),
    }
    return (
        grid.join(counts, on=COLUMNS, how="left")
        .with_columns(pl.col("count").fill_null(0))
        .sort([*KEYS, *(pl.col(name).cast(dtype) for name, dtype in order.items())])
        .select(*COLUMNS, "count")
        .cast(pl.Schema(CONFUSION_SCHEMA))
    )
