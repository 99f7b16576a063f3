"""Paired comparisons on hand-built per-case tables, with hand-computed expected values."""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest

from toolcalib.metrics.paired import (
    METRICS,
    PAIRED_SCHEMA,
    compare_models,
    mcnemar_exact,
    paired,
    shift_table,
)

# --- mcnemar_exact ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (0, 5, 0.0625),  # 2 * 1/32
        (5, 0, 0.0625),
        (3, 3, 1.0),  # 2 * 42/64 > 1
        (1, 9, 0.021484375),  # 2 * 11/1024
        (9, 1, 0.021484375),
        (0, 1, 1.0),
        (2, 8, 0.109375),  # 2 * 56/1024
        (0, 10, 2 / 1024),
        (4, 5, 1.0),
    ],
)
def test_mcnemar_known_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == p


def test_mcnemar_matches_binomial_tail_and_is_symmetric() -> None:
    for b in range(0, 25):
        for c in range(0, 25):
            n = b + c
            tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
            expected = 1.0 if n == 0 else float(min(Fraction(1), 2 * tail))
            assert mcnemar_exact(b, c) == expected == mcnemar_exact(c, b)
            assert 0.0 < mcnemar_exact(b, c) <= 1.0


def test_mcnemar_large_counts_stay_exact_and_positive() -> None:
    assert mcnemar_exact(0, 884) == 2.0**-883
    assert mcnemar_exact(500, 500) == 1.0


@pytest.mark.parametrize(("b", "c"), [(-1, 3), (3, -1)])
def test_mcnemar_rejects_negative(b: int, c: int) -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(b, c)


@pytest.mark.parametrize(("b", "c"), [(1.0, 3), (True, 3), (2, "3")])
def test_mcnemar_rejects_non_integers(b: object, c: object) -> None:
    with pytest.raises(TypeError):
        mcnemar_exact(b, c)  # type: ignore[arg-type]


# --- hand-built per-case frames --------------------------------------------------------------


def row(
    model: str,
    variant: str,
    case_id: str,
    *,
    gar: bool = False,
    ter: bool = False,
    acc: bool = False,
    turn: bool = False,
    scored: bool = True,
    benchmark: str = "bfcl",
    category: str = "base",
) -> dict:
    """One per-case row with the columns paired() and triples() read."""
    return {
        "model": model,
        "variant": variant,
        "benchmark": benchmark,
        "category": category,
        "case_id": case_id,
        "gold_action": "tool_call",
        "gold_emitted": gar,
        "gold_turn_hit": turn,
        "gold_emitted_any_step": gar,
        "tool_call_emitted": ter,
        "gold_turn_tool_call": ter,
        "passed": acc if scored else None,
        "scored": scored,
        "outcome": "completed" if scored else "error",
        "bound": None,
    }


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, infer_schema_length=None)


BASE = {"model": "m", "variant": "baseline"}
SRI = {"model": "m", "variant": "sri"}

# Category "base": c1..c6 in both variants; c7 only in baseline; c8 only in sri;
# c6 unscored in sri (error) so not paired. GAR: baseline hits c1,c2,c3; sri hits c2,c3,c4,c5.
BASE_ROWS = [
    row("m", "baseline", "c1", gar=True, acc=True),
    row("m", "baseline", "c2", gar=True, acc=True),
    row("m", "baseline", "c3", gar=True),
    row("m", "baseline", "c4"),
    row("m", "baseline", "c5"),
    row("m", "baseline", "c6", gar=True),
    row("m", "baseline", "c7", gar=True),
]
SRI_ROWS = [
    row("m", "sri", "c1", acc=True),
    row("m", "sri", "c2", gar=True),
    row("m", "sri", "c3", gar=True, acc=True),
    row("m", "sri", "c4", gar=True),
    row("m", "sri", "c5", gar=True, acc=True),
    row("m", "sri", "c6", gar=False, scored=False),
    row("m", "sri", "c8", gar=True),
]
CASES = frame(BASE_ROWS + SRI_ROWS)


def only(result_table: pl.DataFrame) -> dict:
    assert result_table.height == 1
    return result_table.row(0, named=True)


def test_paired_gar_pairs_only_cases_scored_in_both() -> None:
    result = paired(CASES, a=BASE, b=SRI, metric="gar")
    assert (result.a, result.b, result.metric) == (BASE, SRI, "gar")
    assert result.table.schema == pl.Schema(PAIRED_SCHEMA)
    got = only(result.table)
    # pairs c1..c5: baseline hits c1,c2,c3 (3/5); sri hits c2,c3,c4,c5 (4/5)
    assert got["n_pairs"] == 5
    assert got["rate_a"] == 0.6 and got["rate_b"] == 0.8
    assert got["delta"] == pytest.approx(0.2)
    assert (got["b01"], got["b10"]) == (2, 1)
    assert got["flips_gained"] == "c4|c5"
    assert got["flips_lost"] == "c1"
    assert got["p_value"] == mcnemar_exact(2, 1) == 1.0
    # c6 (unscored in sri) and c7 (absent from sri) excluded; c6 and c8 on the sri side
    assert (got["n_unpaired_a"], got["n_unpaired_b"]) == (2, 2)
    assert (got["benchmark"], got["category"], got["metric"]) == ("bfcl", "base", "gar")


def test_paired_acc_and_direction() -> None:
    forward = only(paired(CASES, a=BASE, b=SRI, metric="acc").table)
    # acc: baseline c1,c2; sri c1,c3,c5 over pairs c1..c5
    assert (forward["rate_a"], forward["rate_b"]) == (0.4, 0.6)
    assert (forward["b01"], forward["b10"]) == (2, 1)
    assert (forward["flips_gained"], forward["flips_lost"]) == ("c3|c5", "c2")
    backward = only(paired(CASES, a=SRI, b=BASE, metric="acc").table)
    assert (backward["b01"], backward["b10"]) == (1, 2)
    assert (backward["flips_gained"], backward["flips_lost"]) == ("c2", "c3|c5")
    assert backward["delta"] == pytest.approx(-forward["delta"])
    assert backward["p_value"] == forward["p_value"]


def test_paired_flips_sorted_and_empty_when_none() -> None:
    rows = [row("m", "baseline", c) for c in ("z9", "a1", "m5")]
    rows += [row("m", "sri", c, ter=True) for c in ("m5", "z9", "a1")]
    got = only(paired(frame(rows), a=BASE, b=SRI, metric="ter").table)
    assert got["flips_gained"] == "a1|m5|z9"
    assert got["flips_lost"] == ""
    assert (got["b01"], got["b10"], got["n_pairs"]) == (3, 0, 3)
    assert got["p_value"] == 0.25
    assert got["delta"] == 1.0


def test_paired_gar_turn_metric() -> None:
    rows = [row("m", "baseline", "c1", turn=True), row("m", "sri", "c1", turn=False)]
    got = only(paired(frame(rows), a=BASE, b=SRI, metric="gar_turn").table)
    assert (got["b01"], got["b10"], got["flips_lost"]) == (0, 1, "c1")
    assert got["metric"] == "gar_turn"


def test_paired_groups_by_benchmark_and_category_never_pooled() -> None:
    rows = [
        row("m", "baseline", "x", category="b_cat", gar=True),
        row("m", "sri", "x", category="b_cat", gar=False),
        row("m", "baseline", "x", category="a_cat", gar=False),
        row("m", "sri", "x", category="a_cat", gar=True),
        row("m", "baseline", "y", benchmark="other", category="a_cat"),
    ]
    table = paired(frame(rows), a=BASE, b=SRI, metric="gar").table
    keys = table.select("benchmark", "category").rows()
    assert keys == [("bfcl", "a_cat"), ("bfcl", "b_cat"), ("other", "a_cat")]
    assert table["b01"].to_list() == [1, 0, 0]
    assert table["b10"].to_list() == [0, 1, 0]
    # a group with no pairs is still reported, with its unmatched case counted
    lonely = table.row(2, named=True)
    assert lonely["n_pairs"] == 0 and lonely["n_unpaired_a"] == 1 and lonely["n_unpaired_b"] == 0
    assert lonely["rate_a"] is None and lonely["rate_b"] is None and lonely["delta"] is None
    assert lonely["p_value"] == 1.0


def test_paired_unscored_on_both_sides_counted_once_per_side() -> None:
    rows = [
        row("m", "baseline", "c1", scored=False),
        row("m", "sri", "c1", scored=False),
        row("m", "baseline", "c2", gar=True),
        row("m", "sri", "c2", gar=True),
    ]
    got = only(paired(frame(rows), a=BASE, b=SRI, metric="gar").table)
    assert (got["n_pairs"], got["n_unpaired_a"], got["n_unpaired_b"]) == (1, 1, 1)
    assert (got["rate_a"], got["rate_b"], got["delta"]) == (1.0, 1.0, 0.0)


def test_paired_rates_rounded_to_six_decimals() -> None:
    rows = [row("m", "baseline", f"c{i}", gar=i == 0) for i in range(3)]
    rows += [row("m", "sri", f"c{i}", gar=i < 2) for i in range(3)]
    got = only(paired(frame(rows), a=BASE, b=SRI, metric="gar").table)
    assert (got["rate_a"], got["rate_b"], got["delta"]) == (0.333333, 0.666667, 0.333333)


def test_paired_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        paired(CASES, a=BASE, b=SRI, metric="nope")
    with pytest.raises(ValueError, match="unknown column"):
        paired(CASES, a={"modle": "m"}, b=SRI, metric="gar")
    with pytest.raises(ValueError, match="several rows per case"):
        paired(CASES, a={"model": "m"}, b=SRI, metric="gar")
    with pytest.raises(ValueError, match="empty"):
        paired(CASES, a={}, b=SRI, metric="gar")
    with pytest.raises(ValueError, match="lacks column"):
        paired(CASES.drop("gold_turn_hit"), a=BASE, b=SRI, metric="gar_turn")
    nulls = CASES.with_columns(tool_call_emitted=pl.lit(None, pl.Boolean))
    with pytest.raises(ValueError, match="null tool_call_emitted"):
        paired(nulls, a=BASE, b=SRI, metric="ter")


def test_paired_empty_selection_gives_empty_typed_table() -> None:
    table = paired(CASES, a={"model": "x"}, b={"model": "y"}, metric="acc").table
    assert table.height == 0 and table.schema == pl.Schema(PAIRED_SCHEMA)


def test_paired_rates_are_shares_of_each_side_when_all_cases_pair() -> None:
    rows = [row("m", "baseline", f"c{i}", gar=i % 2 == 0, ter=i % 3 == 0, acc=i < 4)
            for i in range(7)]  # fmt: skip
    rows += [row("m", "sri", f"c{i}", gar=i % 3 == 0, ter=True, acc=i > 1) for i in range(7)]
    cases = frame(rows)
    for metric in ("gar", "ter", "acc"):
        got = only(paired(cases, a=BASE, b=SRI, metric=metric).table)
        shares = cases.group_by("variant").agg(pl.col(METRICS[metric]).mean()).sort("variant")
        expected = [round(x, 6) for x in shares[METRICS[metric]]]  # baseline, sri
        assert [got["rate_a"], got["rate_b"]] == expected
        assert got["b01"] - got["b10"] == round(got["delta"] * got["n_pairs"])


# --- shift_table -----------------------------------------------------------------------------

SHIFT_COLUMNS = [
    "model",
    "variant",
    "benchmark",
    "category",
    "metric",
    "n_pairs",
    "rate_baseline",
    "rate_variant",
    "delta",
    "b01",
    "b10",
    "p_value",
    "flips_gained",
    "flips_lost",
    "n_unpaired_baseline",
    "n_unpaired_variant",
    "n_undecided",
]


def shift_cases() -> pl.DataFrame:
    """Two models x (baseline, sri, cot) x two categories; model 'n' lacks 'cot'."""
    rows = []
    for model in ("n", "m"):
        for variant in ("sri", "baseline", "cot"):
            if model == "n" and variant == "cot":
                continue
            for category in ("irr", "base"):
                for i in range(4):
                    hit = variant != "baseline" and i < 2
                    rows.append(
                        row(model, variant, f"{category}{i}", category=category,
                            gar=hit, ter=not hit, acc=variant == "cot")
                    )  # fmt: skip
    return frame(rows)


def test_shift_table_shape_and_order_with_two_variants() -> None:
    table = shift_table(shift_cases())
    assert table.columns == SHIFT_COLUMNS
    # m: cot, sri; n: sri -> 3 comparisons x 2 categories x 3 metrics
    assert table.height == 3 * 2 * 3
    pairs = table.select("model", "variant").unique(maintain_order=True).rows()
    assert pairs == [("m", "cot"), ("m", "sri"), ("n", "sri")]
    first = table.filter(model="m", variant="cot")
    assert first["category"].to_list() == ["base"] * 3 + ["irr"] * 3
    assert first["metric"].to_list() == ["gar", "ter", "acc"] * 2
    assert set(table["n_pairs"].to_list()) == {4}
    assert "baseline" not in table["variant"].to_list()


def test_shift_table_values() -> None:
    table = shift_table(shift_cases())
    gar = table.filter(model="m", variant="sri", category="irr", metric="gar").row(0, named=True)
    assert (gar["rate_baseline"], gar["rate_variant"], gar["delta"]) == (0.0, 0.5, 0.5)
    assert (gar["b01"], gar["b10"]) == (2, 0)
    assert (gar["flips_gained"], gar["flips_lost"]) == ("irr0|irr1", "")
    assert gar["p_value"] == 0.5
    ter = table.filter(model="m", variant="sri", category="irr", metric="ter").row(0, named=True)
    assert (ter["b01"], ter["b10"], ter["delta"]) == (0, 2, -0.5)
    assert ter["flips_lost"] == "irr0|irr1"
    acc = table.filter(model="m", variant="cot", category="base", metric="acc").row(0, named=True)
    assert (acc["rate_baseline"], acc["rate_variant"], acc["b01"]) == (0.0, 1.0, 4)
    assert acc["p_value"] == 0.125


def test_shift_table_is_deterministic_under_row_order() -> None:
    cases = shift_cases()
    shuffled = cases.sample(fraction=1.0, shuffle=True, seed=7)
    assert shift_table(cases).equals(shift_table(shuffled))


def test_shift_table_counts_unmatched_cases() -> None:
    cases = pl.concat([
        frame(BASE_ROWS + SRI_ROWS),
        frame([row("m", "baseline", "k1", category="extra")]),
    ])  # fmt: skip
    table = shift_table(cases)
    base = table.filter(category="base", metric="gar").row(0, named=True)
    assert (base["n_pairs"], base["n_unpaired_baseline"], base["n_unpaired_variant"]) == (5, 2, 2)
    extra = table.filter(category="extra", metric="acc").row(0, named=True)
    assert (extra["n_pairs"], extra["n_unpaired_baseline"], extra["rate_variant"]) == (0, 1, None)


def test_shift_table_custom_baseline_and_no_variants() -> None:
    table = shift_table(CASES, baseline="sri")
    assert table["variant"].unique().to_list() == ["baseline"]
    got = table.filter(metric="gar").row(0, named=True)
    assert (got["b01"], got["b10"]) == (1, 2)  # baseline vs sri reversed
    empty = shift_table(frame(BASE_ROWS))
    assert empty.height == 0 and empty.columns == SHIFT_COLUMNS


# --- compare_models --------------------------------------------------------------------------


def test_compare_models() -> None:
    rows = [row("a", "baseline", f"c{i}", acc=i < 1, gar=True) for i in range(4)]
    rows += [row("b", "baseline", f"c{i}", acc=i < 3, gar=True) for i in range(4)]
    rows += [row("b", "sri", f"c{i}", acc=False) for i in range(4)]  # other variant: ignored
    table = compare_models(frame(rows), "a", "b")
    assert table.columns[:3] == ["model_a", "model_b", "variant"]
    assert table.columns[3:] == list(PAIRED_SCHEMA)
    assert table["metric"].to_list() == ["gar", "ter", "acc"]
    acc = table.filter(metric="acc").row(0, named=True)
    assert (acc["model_a"], acc["model_b"], acc["variant"]) == ("a", "b", "baseline")
    assert (acc["n_pairs"], acc["b01"], acc["b10"], acc["flips_gained"]) == (4, 2, 0, "c1|c2")
    assert (acc["rate_a"], acc["rate_b"], acc["delta"]) == (0.25, 0.75, 0.5)
    gar = table.filter(metric="gar").row(0, named=True)
    assert (gar["b01"], gar["b10"], gar["p_value"]) == (0, 0, 1.0)
    sri = compare_models(frame(rows), "b", "a", variant="sri")
    assert set(sri["n_pairs"].to_list()) == {0}
    assert set(sri["n_unpaired_a"].to_list()) == {4}


def test_metrics_map_to_per_case_columns() -> None:
    assert METRICS == {
        "gar": "gold_emitted",
        "ter": "tool_call_emitted",
        "acc": "passed",
        "gar_turn": "gold_turn_hit",
    }
