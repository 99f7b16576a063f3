"""Two runs of one model compared on the same cases (`metrics.pairs`): pairs.csv and
pair_flips.csv from hand-built per-case tables covering every cause and an undecided GAR, the
aggregate stage's `--pairs`, and the report's "Paired runs" section."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from toolcalib.cli import command_parser, main
from toolcalib.jsonio import InputError
from toolcalib.metrics.inputs import read_csv_table
from toolcalib.metrics.paired import SHIFT, mcnemar_exact, paired, shift_table
from toolcalib.metrics.pairs import (
    FLIPS,
    PAIRS,
    Pair,
    flip_table,
    pair_table,
    parse_pairs,
    write_pairs,
)
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.triples import triples
from toolcalib.report import ReportTables
from toolcalib.report.build import render_html, render_summary

BASE, OTHER = "vllm-main.gpt-oss", "vllm-harmony.gpt-oss"
PAIR = Pair("gpt-oss-builds", BASE, OTHER)
UNDECIDED = object()


def case(model: str, case_id: str, emitted: str = "tool_call", *, turn: str | None = None,
         passed: bool | None = True, scored: bool = True, gar: Any = None,
         variant: str = "baseline", category: str = "multi_turn_base",
         gold: str = "tool_call") -> dict[str, Any]:
    """One per-case row: GAR from `emitted` (`gar=UNDECIDED`: null, the gold class could
    have been in unrecorded text), the gold turn's class `turn` (default: the first class
    emitted); unscored: an infrastructure error."""
    classes = emitted.split("|")
    turn = classes[0] if turn is None else turn
    undecided = gar is UNDECIDED
    hit = None if undecided else gold in classes
    turn_hit = None if undecided else turn == gold
    return {name: None for name in CASE_SCHEMA} | {
        "model": model, "variant": variant, "benchmark": "bfcl", "category": category,
        "case_id": case_id, "gold_action": gold, "gold_turn": 0, "gold_turn_gold": gold,
        "emitted": emitted, "gold_emitted": hit, "gold_turn_class": turn,
        "gold_turn_hit": turn_hit, "tool_call_emitted": "tool_call" in classes,
        "gold_turn_tool_call": turn == "tool_call", "emission_classes": emitted,
        "gold_emitted_any_step": hit, "passed": passed if scored else None, "scored": scored,
        "outcome": "completed" if scored else "error", "probes_fired": 0,
        "unclosed_reasoning_turns": 0, "ambiguous_turns": 0,
    }


ROWS = [
    # c1: the same on both sides: no flip
    case(BASE, "c1"), case(OTHER, "c1"),
    # c2: an infrastructure error on other only; c3: on base only
    case(BASE, "c2"), case(OTHER, "c2", "", scored=False),
    case(BASE, "c3", "", scored=False), case(OTHER, "c3", passed=False),
    # c4: the action changed (and with it every metric)
    case(BASE, "c4", "other", passed=False), case(OTHER, "c4"),
    # c5: the same action, the verdict changed
    case(BASE, "c5"), case(OTHER, "c5", passed=False),
    # c6: GAR undecided on base (its text not recorded); TER gained
    case(BASE, "c6", "unknown", gar=UNDECIDED, passed=False),
    case(OTHER, "c6", passed=False),
    # c7: base only (unpaired)
    case(BASE, "c7"),
    # c8: the classes changed, no metric moved; c9: only the class at the gold turn changed
    case(BASE, "c8", "ask|tool_call", turn="tool_call"), case(OTHER, "c8"),
    case(BASE, "c9", "ask|tool_call", turn="ask"),
    case(OTHER, "c9", "ask|tool_call", turn="tool_call"),
    # another cell, the same on both sides; a variant base alone ran; a model of no pair
    case(BASE, "r1", "refuse", category="irrelevance", gold="refuse"),
    case(OTHER, "r1", "refuse", category="irrelevance", gold="refuse"),
    case(BASE, "c1", variant="sri"),
    case("bystander", "c1", "other", passed=False),
]  # fmt: skip


def per_case() -> pl.DataFrame:
    return pl.DataFrame(ROWS, schema=CASE_SCHEMA)


def by_metric(table: pl.DataFrame, category: str = "multi_turn_base") -> dict[str, dict]:
    return {r["metric"]: r for r in table.filter(pl.col("category") == category)
            .iter_rows(named=True)}


def test_pairs_table_per_metric_with_causes_and_undecided_gar() -> None:
    table = pair_table(per_case(), [PAIR])
    assert table.columns == PAIRS.names and table.schema == pl.Schema(PAIRS.schema())
    keys = table.select("pair", "base", "other", "variant", "benchmark", "category",
                        "gold_action", "metric").rows()
    assert keys == [
        (PAIR.name, BASE, OTHER, "baseline", "bfcl", category, gold, metric)
        for category, gold in (("irrelevance", "refuse"), ("multi_turn_base", "tool_call"))
        for metric in ("gar", "gar_turn", "ter", "acc")]  # no row for `sri`: base alone ran it
    rows = by_metric(table)
    expected = {  # n_pairs, rate_base, rate_other, b01, b10, gained, lost, undecided, causes
        "gar": (5, 0.8, 1.0, 1, 0, "c4", "", 1, (1, 0)),
        "gar_turn": (5, 0.6, 1.0, 2, 0, "c4|c9", "", 1, (2, 0)),
        "ter": (6, 0.666667, 1.0, 2, 0, "c4|c6", "", 0, (2, 0)),
        "acc": (6, 0.666667, 0.666667, 1, 1, "c4", "c5", 0, (1, 1)),
    }
    for metric, (n, base, other, b01, b10, gained, lost, undecided, causes) in expected.items():
        r = rows[metric]
        assert (r["n_pairs"], r["rate_base"], r["rate_other"]) == (n, base, other), metric
        assert (r["b01"], r["b10"], r["flips_gained"], r["flips_lost"]) == (
            b01, b10, gained, lost), metric
        assert r["delta"] == pytest.approx(other - base, abs=1e-6)
        assert r["p_value"] == mcnemar_exact(b01, b10)
        assert r["n_undecided"] == undecided, metric
        assert (r["flips_action_changed"], r["flips_execution_changed"]) == causes, metric
        # every discordant pair has one cause
        assert sum(causes) == b01 + b10
        # c2 (error on other), c3 (error on base), c7 (base only); c6 undecided for GAR only
        assert (r["n_unpaired_base"], r["n_unpaired_other"]) == (3, 2)
        assert (r["error_appeared"], r["error_vanished"]) == (1, 1)
    same = by_metric(table, "irrelevance")
    assert all((r["n_pairs"], r["b01"], r["b10"], r["error_appeared"]) == (1, 0, 0, 0)
               for r in same.values())


def test_flips_table_one_row_per_changed_case_with_its_cause() -> None:
    flips = flip_table(per_case(), [PAIR])
    assert flips.columns == FLIPS.names
    got = flips.select("case_id", "cause", "metrics_gained", "metrics_lost").rows()
    assert got == [
        ("c2", "error_appeared", "", ""),
        ("c3", "error_vanished", "", ""),
        ("c4", "action_changed", "gar|gar_turn|ter|acc", ""),
        ("c5", "execution_changed", "", "acc"),
        ("c6", "action_changed", "ter", ""),  # GAR undecided on base: no GAR flip
        ("c8", "action_changed", "", ""),  # another class beside the gold one
        ("c9", "action_changed", "gar_turn", ""),  # the class at the gold turn
    ]
    c2 = flips.row(0, named=True)
    assert (c2["outcome_base"], c2["outcome_other"], c2["passed_other"]) == (
        "completed", "error", None)
    assert set(flips["pair"]) == {PAIR.name} and set(flips["variant"]) == {"baseline"}


def test_the_pair_is_directional() -> None:
    back = pair_table(per_case(), [Pair("back", OTHER, BASE)])
    rows = by_metric(back)
    assert (rows["acc"]["b01"], rows["acc"]["b10"]) == (1, 1)
    assert (rows["gar"]["b01"], rows["gar"]["b10"], rows["gar"]["flips_lost"]) == (0, 1, "c4")
    assert (rows["gar"]["error_appeared"], rows["gar"]["error_vanished"]) == (1, 1)
    assert (rows["gar"]["n_unpaired_base"], rows["gar"]["n_unpaired_other"]) == (2, 3)


def test_write_pairs_and_read_back(tmp_path: Path) -> None:
    paths = write_pairs(tmp_path, per_case(), [PAIR])
    pairs = read_csv_table(paths["pairs.csv"], PAIRS.schema())
    assert pairs.equals(pair_table(per_case(), [PAIR]))
    flips = read_csv_table(paths["pair_flips.csv"], FLIPS.schema())
    assert flips.equals(flip_table(per_case(), [PAIR]))
    # no pairs: both files are their header alone
    empty = write_pairs(tmp_path / "none", per_case(), [])
    assert empty["pairs.csv"].read_text() == ",".join(PAIRS.names) + "\n"
    assert empty["pair_flips.csv"].read_text() == ",".join(FLIPS.names) + "\n"


def test_pairs_are_checked_again_by_the_stage() -> None:
    assert parse_pairs([{"name": "p", "base": "a", "other": "b"}]) == [Pair("p", "a", "b")]
    with pytest.raises(InputError, match="both 'a'"):
        parse_pairs([{"name": "p", "base": "a", "other": "a"}])
    with pytest.raises(InputError, match="named twice: p"):
        parse_pairs([{"name": "p", "base": "a", "other": "b"}] * 2)
    with pytest.raises(InputError, match="three names"):
        parse_pairs([{"name": "p", "base": "a"}])
    args = command_parser("aggregate").parse_args(
        ["--actions", "a", "--runs", "r", "--out-dir", "o",
         "--pairs", '[{"base":"a","name":"p","other":"b"}]'])
    assert args.pairs == [{"name": "p", "base": "a", "other": "b"}]
    assert command_parser("aggregate").parse_args(
        ["--actions", "a", "--runs", "r", "--out-dir", "o"]).pairs == ()


def test_generalised_paired_keeps_the_shift_table() -> None:
    """The variant shifts are the same machinery, keyed by (benchmark, category, case id):
    a case whose GAR is undecided in either variant is no pair there, counted apart."""
    rows = [case("m", "x1", gar=UNDECIDED), case("m", "x1", variant="sri"),
            case("m", "x2", "other", passed=False), case("m", "x2", variant="sri")]
    frame = pl.DataFrame(rows, schema=CASE_SCHEMA)
    shift = shift_table(frame)
    assert shift.columns == SHIFT.names
    gar = shift.filter(pl.col("metric") == "gar").row(0, named=True)
    assert (gar["n_pairs"], gar["n_undecided"], gar["b01"]) == (1, 1, 1)
    assert (gar["n_unpaired_baseline"], gar["n_unpaired_variant"]) == (0, 0)
    with pytest.raises(ValueError, match="null passed"):  # Acc is never undecided
        paired(frame.with_columns(passed=pl.lit(None, pl.Boolean)),
               a={"variant": "baseline"}, b={"variant": "sri"}, metric="acc")


def test_report_shows_paired_runs_after_the_shifts_with_case_listing() -> None:
    frame = per_case().filter(pl.col("model") != "bystander")
    pairs, flips = pair_table(frame, [PAIR]), flip_table(frame, [PAIR])
    shift = shift_table(frame)
    confusion = (frame.filter("scored")
                 .group_by("model", "variant", "benchmark", "category",
                           gold="gold_turn_gold", emitted="gold_turn_class")
                 .agg(count=pl.len().cast(pl.Int64)).with_columns(level=pl.lit("gold_turn"))
                 .sort(pl.all()))
    tables = ReportTables(triples(frame), confusion, frame, shift=shift, pairs=pairs,
                          pair_flips=flips)
    page = render_html(tables)
    shifts, paired_at, triples_at = (page.index(f'<section id="{s}">')
                                     for s in ("shifts", "pairs", "triples"))
    assert shifts < paired_at < triples_at
    section = page[paired_at:triples_at]
    assert "Paired runs" in section and f"{OTHER} against {BASE}" in section
    assert 'id="pair-' in section and "c4 (GAR+, GAR@gold turn+, TER+, Acc+)" in section
    assert "c5 (Acc-)" in section
    for anchor in re.findall(r'href="#(pair-[^"]+)"', section):
        assert f'id="{anchor}"' in section, anchor  # every count links to its cases
    md = render_summary(tables)
    heads = ["## Variant shifts", "## Paired runs", "## Triples"]
    assert [md.index(h) for h in heads] == sorted(md.index(h) for h in heads)
    assert (f"| {PAIR.name} | baseline | multi_turn_base | tool_call | Acc | 6 | 66.7% | "
            "66.7% | +0.0 | 1 | 1 / 1 | 1 / 1 | 0 |") in md
    # without pairs: no section
    bare = ReportTables(tables.triples, tables.confusion, frame, shift=shift)
    assert 'id="pairs"' not in render_html(bare) and "Paired runs" not in render_summary(bare)



def test_the_aggregate_stage_writes_both_tables_from_its_pairs_argument(tmp_path: Path) -> None:
    runs = tmp_path / "per_case.jsonl"
    per_case().write_ndjson(runs)
    actions = tmp_path / "actions.jsonl"
    actions.write_text("")
    out = tmp_path / "metrics"
    argument = json.dumps([{"name": PAIR.name, "base": BASE, "other": OTHER}])
    assert main(["aggregate", "--actions", str(actions), "--runs", str(runs),
                 "--pairs", argument, "--out-dir", str(out)]) == 0
    pairs = read_csv_table(out / "pairs.csv", PAIRS.schema())
    assert set(pairs["pair"]) == {PAIR.name} and pairs.height == 8
    flips = read_csv_table(out / "pair_flips.csv", FLIPS.schema())
    assert flips["case_id"].to_list() == ["c2", "c3", "c4", "c5", "c6", "c8", "c9"]
    bad = json.dumps([{"name": "p", "base": BASE, "other": BASE}])
    assert main(["aggregate", "--actions", str(actions), "--runs", str(runs),
                 "--pairs", bad, "--out-dir", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()  # checked before anything is written
