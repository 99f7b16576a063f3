"""The per-case table behind every triple: one row per (model, variant, benchmark, case)."""

from __future__ import annotations

import polars as pl

from toolcalib.metrics.inputs import (
    CASE_KEYS,
    Cases,
    Rows,
    action_table,
    gold_table,
    score_table,
)

ACC_WITHOUT_GOLD = "acc_without_gold"
"""Bound violation Acc > GAR: passed, yet the gold class was never emitted (grader masking)."""
GOLD_WITHOUT_ACC = "gold_without_acc"
"""Bound direction GAR > Acc: the gold class was emitted, yet the case failed."""


def _classes(column: str) -> pl.Expr:
    return pl.col(column).drop_nulls().unique().sort()


def _require(frame: pl.DataFrame, bad: pl.Expr, what: str) -> None:
    """Raise naming the first cases where `bad` holds."""
    hits = frame.filter(bad).sort(CASE_KEYS)
    if hits.height:
        names = ", ".join(
            f"{r['benchmark']}/{r['case_id']}" for r in hits.head(5).iter_rows(named=True)
        )
        raise ValueError(f"{hits.height} case(s) {what}: {names}")


def per_case(actions: Rows, scores: Rows, cases: Cases) -> pl.DataFrame:
    """Classes emitted, gold hits, tool use and verdict of every case that has action rows.

    `emitted` is the union of turn classes (GAR); `emission_classes` the union over every
    emission (the published code's union, where a lower-priority emission of a turn counts too).
    """
    table = action_table(actions)
    turns = (
        table.filter(pl.col("level") == "turn")
        .group_by(CASE_KEYS)
        .agg(
            outcome=pl.col("outcome").first(),
            run_scored=pl.col("scored").all(),
            emitted_list=_classes("action"),
            gold_turns=pl.col("turn").filter("is_gold_turn"),
            gold_turn_gold=pl.col("gold_action").filter("is_gold_turn").first(),
            gold_turn_class=pl.col("action").filter("is_gold_turn").first(),
            probes_fired=pl.col("probes_fired").sum(),
        )
    )
    emissions = (
        table.filter(pl.col("level") == "emission")
        .group_by(CASE_KEYS)
        .agg(emission_list=_classes("action"))
    )
    frame = (
        turns.join(emissions, on=CASE_KEYS, how="left")
        .join(gold_table(cases), on=["benchmark", "case_id"], how="left")
        .join(score_table(scores), on=CASE_KEYS, how="left")
    )
    _require(frame, pl.col("gold_action").is_null(), "have no case (gold) record")
    # A variant may remap gold classes (no tools visible: tool_call -> refuse), so the case's
    # gold is the one its action rows carry at the gold turn.
    frame = frame.with_columns(gold_action=pl.col("gold_turn_gold"))
    gold_turns = pl.col("gold_turns")
    _require(
        frame,
        (gold_turns.list.len() != 1) | (gold_turns.list.first() != pl.col("gold_turn")),
        "do not mark the case's gold turn, and only it, as their gold turn",
    )
    _require(frame, pl.col("scored").is_null(), "have no score row")
    frame = frame.with_columns(scored=pl.col("run_scored") & pl.col("scored"))
    _require(frame, pl.col("scored") & pl.col("passed").is_null(), "are scored without a verdict")

    emission_list = pl.col("emission_list").fill_null([])
    gold_emitted = pl.col("emitted_list").list.contains(pl.col("gold_action"))
    passed = pl.col("passed")
    return (
        frame.with_columns(
            emitted=pl.col("emitted_list").list.join("|"),
            gold_emitted=gold_emitted,
            gold_turn_hit=(pl.col("gold_turn_class") == pl.col("gold_turn_gold")).fill_null(False),
            tool_call_emitted=pl.col("emitted_list").list.contains("tool_call"),
            gold_turn_tool_call=(pl.col("gold_turn_class") == "tool_call").fill_null(False),
            emission_classes=emission_list.list.join("|"),
            gold_emitted_any_step=emission_list.list.contains(pl.col("gold_action")),
            bound=pl.when(pl.col("scored") & passed & ~gold_emitted)
            .then(pl.lit(ACC_WITHOUT_GOLD))
            .when(pl.col("scored") & ~passed & gold_emitted)
            .then(pl.lit(GOLD_WITHOUT_ACC)),
        )
        .select(
            *CASE_KEYS,
            "gold_action",
            "gold_turn",
            "gold_turn_gold",
            "emitted",
            "gold_emitted",
            "gold_turn_class",
            "gold_turn_hit",
            "tool_call_emitted",
            "gold_turn_tool_call",
            "emission_classes",
            "gold_emitted_any_step",
            "passed",
            "scored",
            "outcome",
            "error_type",
            "bound",
            "probes_fired",
        )
        .sort(CASE_KEYS)
    )
