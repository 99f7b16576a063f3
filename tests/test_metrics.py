"""Metrics on small hand-built inputs, with hand-computed expected values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import polars as pl
import pytest

from toolcalib.jsonio import InputError
from toolcalib.metrics import rows as plain
from toolcalib.metrics.confusion import confusion
from toolcalib.metrics.inputs import ACTION_SCHEMA, actions_frame
from toolcalib.metrics.per_case import per_case
from toolcalib.metrics.triples import triples
from toolcalib.metrics.wilson import wilson
from toolcalib.metrics.write import FILES, write_outputs
from toolcalib.records import ACTION_CLASSES, ActionRow
from toolcalib.stages.aggregate import run as aggregate

KEYS = {"model": "m", "variant": "v", "benchmark": "b"}


def case_rows(case_id, category, gold, gold_turn, turns, outcome="completed"):
    """Action rows of one case; `turns[i]` lists the classes of turn i's emissions (None: the
    turn was never reached); a turn's class is the highest-priority one among them."""
    rows = []
    for index, emissions in enumerate(turns):
        where = dict(
            **KEYS,
            case_id=case_id,
            category=category,
            outcome=outcome,
            scored=outcome in ("completed", "step_cap"),
            turn=index,
            gold_action=gold[index],
            is_gold_turn=index == gold_turn,
            evidence="",
        )
        for step, action in enumerate(emissions or []):
            rows.append(ActionRow(**where, level="emission", step=step, action=action, rule="r"))
        present = [a for a in emissions or [] if a is not None]
        action = min(present, key=ACTION_CLASSES.index) if present else None
        rule = "unreached" if emissions is None else "r"
        rows.append(ActionRow(**where, level="turn", step=None, action=action, rule=rule))
    return rows


MP = ["tool_call", "ask"]  # miss_param: turn 0 gold tool_call, turn 1 (the gold turn) ask
ACTIONS = [
    *case_rows("p1", "miss_param", MP, 1, [["tool_call"], ["ask"]]),
    *case_rows("p2", "miss_param", MP, 1, [["other", "ask"], ["tool_call"]]),
    *case_rows("p3", "miss_param", MP, 1, [["tool_call"], ["tool_call", "ask"]]),
    *case_rows("p4", "miss_param", MP, 1, [[None, "other"], ["ask"]]),
    *case_rows("p5", "miss_param", MP, 1, [["malformed"], None], outcome="error"),
    *case_rows("p6", "miss_param", MP, 1, [["tool_call"] * 3, None], outcome="step_cap"),
    *case_rows("c1", "base", ["tool_call"], 0, [["tool_call", "confirm"]]),
    *case_rows("c2", "base", ["tool_call"], 0, [["other"]]),
]
VERDICTS = {"p1": True, "p2": True, "p3": True, "p4": False, "p5": None, "p6": False,
            "c1": True, "c2": False}  # fmt: skip
SCORES = [
    dict(**KEYS, case_id=c, category="base" if c[0] == "c" else "miss_param",
         scored=passed is not None, passed=passed,
         error_type={False: "state_mismatch", None: "error"}.get(passed))
    for c, passed in VERDICTS.items()
]  # fmt: skip
CASES = pl.DataFrame(
    {
        "benchmark": ["b"] * 8,
        "case_id": list(VERDICTS),
        "gold_action": ["ask"] * 6 + ["tool_call"] * 2,
        "gold_turn": [1] * 6 + [0] * 2,
    }
)


@pytest.fixture(scope="module")
def cases() -> pl.DataFrame:
    return per_case(ACTIONS, SCORES, CASES)


@pytest.fixture(scope="module")
def table(cases: pl.DataFrame) -> dict[str, dict]:
    return {row["category"]: row for row in triples(cases).iter_rows(named=True)}


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(8, 10, 0.4902, 0.9433), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (1, 2, 0.0945, 0.9055),
     (3, 5, 0.2307, 0.8824), (0, 1, 0.0, 0.7935)],
)  # fmt: skip
def test_wilson_known_values(k: int, n: int, low: float, high: float) -> None:
    assert wilson(k, n) == pytest.approx((low, high), abs=5e-5)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (None, None)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_per_case(cases: pl.DataFrame) -> None:
    got = {row["case_id"]: row for row in cases.iter_rows(named=True)}
    assert cases["case_id"].to_list() == ["c1", "c2", "p1", "p2", "p3", "p4", "p5", "p6"]
    assert {c: r["emitted"] for c, r in got.items()} == {
        "c1": "tool_call", "c2": "other", "p1": "ask|tool_call", "p2": "ask|tool_call",
        "p3": "tool_call", "p4": "ask|other", "p5": "malformed", "p6": "tool_call",
    }  # fmt: skip
    assert got["p3"]["emission_classes"] == "ask|tool_call"
    assert [got[c]["gold_turn_class"] for c in ("p1", "p2", "p6")] == ["ask", "tool_call", None]
    bounds = {c: r["bound"] for c, r in got.items() if r["bound"]}
    assert bounds == {"p3": "acc_without_gold", "p4": "gold_without_acc"}
    assert got["p5"]["scored"] is False and got["p5"]["outcome"] == "error"
    assert got["p5"]["error_type"] == "error" and got["p5"]["bound"] is None
    assert got["p6"]["outcome"] == "step_cap" and got["p6"]["passed"] is False


def test_triples_miss_param(table: dict[str, dict]) -> None:
    row = table["miss_param"]
    # Scored: p1 p2 p3 p4 p6 (p5 is an infrastructure error).
    assert (row["n"], row["n_excluded"], row["n_step_cap"]) == (5, 1, 1)
    assert row["gold_action"] == "ask"
    expected = {
        "gar": 3,  # p1 p2 p4: ask among the turn classes
        "gar_turn": 2,  # p1 p4: ask at the gold turn
        "gar_emission": 4,  # also p3, whose ask lost its turn to a tool call
        "ter": 4,  # p1 p2 p3 p6
        "ter_turn": 2,  # p2 p3
        "acc": 3,  # p1 p2 p3
    }
    for rate, k in expected.items():
        assert row[f"{rate}_k"] == k, rate
        assert row[rate] == k / 5, rate
        assert (row[f"{rate}_lo"], row[f"{rate}_hi"]) == pytest.approx(wilson(k, 5), abs=1e-6)
    assert (row["gar_lo"], row["gar_hi"]) == pytest.approx((0.2307, 0.8824), abs=5e-5)
    assert row["gar_lo"] == round(row["gar_lo"], 6)
    assert (row["acc_without_gold"], row["gold_without_acc"]) == (1, 1)  # p3; p4


def test_triples_base(table: dict[str, dict]) -> None:
    row = table["base"]
    assert (row["n"], row["n_excluded"], row["gold_action"]) == (2, 0, "tool_call")
    assert (row["gar"], row["gar_turn"], row["ter"], row["acc"]) == (0.5, 0.5, 0.5, 0.5)
    assert (row["acc_without_gold"], row["gold_without_acc"]) == (0, 0)


def test_triples_columns_and_order(cases: pl.DataFrame) -> None:
    frame = triples(cases)
    required = (
        "model variant benchmark category gold_action n gar gar_lo gar_hi gar_turn ter ter_turn"
        " acc acc_lo acc_hi acc_without_gold gold_without_acc n_excluded gar_turn_lo gar_turn_hi"
        " ter_lo ter_hi ter_turn_lo ter_turn_hi n_step_cap unclosed_reasoning_turns ambiguous_turns"
        " gar_structural_n gar_structural_k gar_structural gar_structural_lo gar_structural_hi"
    ).split()
    assert set(required) <= set(frame.columns)
    assert frame.columns[-5:] == plain.STRUCTURAL_COLUMNS  # after every older column
    assert frame["category"].to_list() == ["base", "miss_param"]


def _failed_cases(rows: list, ids: list[str], unscored: str) -> pl.DataFrame:
    """The per-case table of category `base` cases `ids`, gold tool_call at turn 0, each
    failed except `unscored`, which ended in an infrastructure error."""
    scores = [dict(**KEYS, case_id=c, category="base", scored=c != unscored,
                   passed=False if c != unscored else None,
                   error_type="state_mismatch" if c != unscored else "error") for c in ids]
    gold = pl.DataFrame({"benchmark": ["b"] * len(ids), "case_id": ids,
                         "gold_action": ["tool_call"] * len(ids), "gold_turn": [0] * len(ids)})
    return per_case(rows, scores, gold)


def test_unclosed_reasoning_turns_are_counted_per_case_and_cell() -> None:
    """Turns with a kept emission that is only an unclosed reasoning block (rule
    `...:other:unclosed_reasoning`): once per turn; dropped emissions and, in the cell, unscored
    cases do not count."""
    unclosed = "default:other:unclosed_reasoning"
    malformed = "malformed:" + unclosed
    rules = {("u1", 0, 0): unclosed, ("u1", 0, 1): unclosed, ("u1", 1, 1): malformed,
             ("u2", 0, 0): unclosed, ("u3", 1, 0): unclosed}
    rows = []
    for case_id, outcome in (("u1", "completed"), ("u2", "error"), ("u3", "completed")):
        for row in case_rows(case_id, "base", ["tool_call", "tool_call"], 0,
                             [["other", "other"], ["other", "malformed"]], outcome=outcome):
            rule = rules.get((case_id, row.turn, row.step), row.rule)
            dropped = (case_id, row.turn, row.step) == ("u3", 1, 0)
            rows.append(row.replace(**{
                "rule": rule, "level": "dropped" if dropped else row.level}))
    cases = _failed_cases(rows, ["u1", "u2", "u3"], unscored="u2")
    assert dict(zip(cases["case_id"], cases["unclosed_reasoning_turns"], strict=True)) == {
        "u1": 2, "u2": 1, "u3": 0}
    (row,) = triples(cases).iter_rows(named=True)
    assert (row["n"], row["unclosed_reasoning_turns"]) == (2, 2)  # u2 is not scored


def test_ambiguous_turns_are_counted_per_case_and_cell() -> None:
    """Turns whose class a rule could not decide (the turn's rule holds `:ambiguous:`): once
    per turn, whatever its emissions say; in the cell, unscored cases do not count."""
    ambiguous = "default:refuse:ambiguous:refuse|ask"
    rules = {("a1", 0): ambiguous, ("a1", 1): "default:ask:ambiguous:ask|confirm",
             ("a2", 0): ambiguous, ("a3", 1): "default:refuse:first_person"}
    rows = []
    for case_id, outcome in (("a1", "completed"), ("a2", "error"), ("a3", "completed")):
        for row in case_rows(case_id, "base", ["tool_call", "tool_call"], 0,
                             [["other"], ["other"]], outcome=outcome):
            if row.level == "turn":
                row = row.replace(rule=rules.get((case_id, row.turn), row.rule))
            elif (case_id, row.turn) == ("a3", 0):
                row = row.replace(rule=ambiguous)  # an emission's rule: no turn is counted
            rows.append(row)
    cases = _failed_cases(rows, ["a1", "a2", "a3"], unscored="a2")
    assert dict(zip(cases["case_id"], cases["ambiguous_turns"], strict=True)) == {
        "a1": 2, "a2": 1, "a3": 0}
    (row,) = triples(cases).iter_rows(named=True)
    assert (row["n"], row["ambiguous_turns"]) == (2, 2)  # a2 is not scored


def test_structural_reading_has_its_own_count_and_interval() -> None:
    """`structural_hit` (the benchmark's published structural reading, by case key) is copied
    to the per-case row, null where the benchmark gives none; `gar_structural` is its share of
    the scored cases that have one, with its denominator, numerator and Wilson interval."""
    rows, scores = [], []
    for case_id, outcome in (("s1", "completed"), ("s2", "completed"), ("s3", "completed"),
                             ("s4", "error")):
        rows += case_rows(case_id, "domain", ["refuse"], 0, [["other"]], outcome=outcome)
        scores.append(dict(**KEYS, case_id=case_id, category="domain",
                           scored=outcome != "error", passed=outcome != "error" or None,
                           error_type=None if outcome != "error" else "error"))
    gold = pl.DataFrame({"benchmark": ["b"] * 4, "case_id": ["s1", "s2", "s3", "s4"],
                         "gold_action": ["refuse"] * 4, "gold_turn": [0] * 4})
    key = ("m", "v", "b", "domain")
    structural = {(*key, "s1"): {"refuse": True}, (*key, "s2"): {"refuse": False},
                  (*key, "s4"): {"refuse": None}}
    cases = per_case(rows, scores, gold, structural)
    assert cases["structural_hit"].to_list() == [True, False, None, None]  # s3: no reading
    (row,) = triples(cases).iter_rows(named=True)
    low, high = wilson(1, 2)
    assert (row["n"], row["gar_structural_n"], row["gar_structural_k"]) == (3, 2, 1)
    assert (row["gar_structural"], row["gar_structural_lo"], row["gar_structural_hi"]) == (
        0.5, round(low, 6), round(high, 6))
    assert row["gar"] == 0.0  # GAR is unchanged: `other` was emitted, never `refuse`


def test_no_structural_reading_gives_a_null_rate() -> None:
    """A benchmark without the reading (BFCL): every per-case value null, the cell's
    `gar_structural_n`/`_k` 0 and its rate and interval null; the other rates unchanged."""
    cases = per_case(ACTIONS, SCORES, CASES)
    assert cases["structural_hit"].null_count() == cases.height
    frame = triples(cases)
    assert frame["gar_structural_n"].to_list() == frame["gar_structural_k"].to_list() == [0, 0]
    assert frame.select(plain.STRUCTURAL_COLUMNS[2:]).null_count().row(0) == (2, 2, 2)


def test_all_excluded_group_has_no_rates() -> None:
    actions = case_rows("x", "base", ["tool_call"], 0, [None], outcome="context_overflow")
    scores = [dict(**KEYS, case_id="x", category="base", scored=False, passed=None,
                   error_type="context_overflow")]  # fmt: skip
    gold = [{"benchmark": "b", "case_id": "x", "gold_action": "tool_call", "gold_turn": 0}]
    row = triples(per_case(actions, scores, pl.DataFrame(gold))).row(0, named=True)
    assert (row["n"], row["n_excluded"], row["gar"], row["acc_lo"]) == (0, 1, None, None)


def test_inputs_as_frames_or_records(cases: pl.DataFrame) -> None:
    same = per_case(actions_frame(ACTIONS), pl.DataFrame(SCORES), CASES)
    assert same.equals(cases)


def test_missing_inputs_are_named() -> None:
    with pytest.raises(InputError, match="1 case\\(s\\) have no score row: b/c2"):
        per_case(ACTIONS, [s for s in SCORES if s["case_id"] != "c2"], CASES)
    with pytest.raises(InputError, match="have no case \\(gold\\) record: b/p1"):
        per_case(ACTIONS, SCORES, CASES.filter(pl.col("case_id") != "p1"))
    with pytest.raises(InputError, match="6 case.s. do not mark .*: b/p1, b/p2, b/p3, b/p4, b/p5$"):
        per_case(ACTIONS, SCORES, CASES.with_columns(gold_turn=pl.lit(0)))


def test_confusion(cases: pl.DataFrame) -> None:
    frame = confusion(ACTIONS, cases).filter(pl.col("category") == "miss_param")
    counts = {
        (r["level"], r["gold"], r["emitted"]): r["count"] for r in frame.iter_rows(named=True)
    }
    assert frame.height == 8 * 3  # gold_turn: ask; all_turns: tool_call, ask; x 7 classes + none
    nonzero = {key: count for key, count in counts.items() if count}
    assert nonzero == {
        ("gold_turn", "ask", "ask"): 2,
        ("gold_turn", "ask", "tool_call"): 2,
        ("gold_turn", "ask", "none"): 1,
        ("all_turns", "tool_call", "tool_call"): 3,
        ("all_turns", "tool_call", "ask"): 1,
        ("all_turns", "tool_call", "other"): 1,
        ("all_turns", "ask", "ask"): 2,
        ("all_turns", "ask", "tool_call"): 2,
        ("all_turns", "ask", "none"): 1,
    }
    assert counts[("all_turns", "tool_call", "malformed")] == 0  # p5 is excluded
    assert frame["level"].to_list()[:8] == ["gold_turn"] * 8
    assert frame["emitted"].to_list()[:8] == [*ACTION_CLASSES, "none"]


def test_write_outputs_is_deterministic(tmp_path: Path) -> None:
    table = per_case(ACTIONS, SCORES, CASES)
    first = write_outputs(tmp_path / "a", ACTIONS, [table])
    # the same cases split into runs given in another order, actions reordered: same bytes
    runs = [table.filter(pl.col("category") == c) for c in ("miss_param", "base")]
    write_outputs(tmp_path / "b", actions_frame(ACTIONS[::-1]), runs)
    assert sorted(first) == sorted(FILES)
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name

    tree = json.loads(first["metrics.json"].read_text())
    cell = tree["m"]["v"]["b"]["miss_param"]
    assert (cell["gar"], cell["ter"], cell["acc"], cell["n"]) == (0.6, 0.8, 0.6, 5)
    csv = first["triples.csv"].read_text().splitlines()
    assert csv[0].startswith("model,variant,benchmark,category,gold_action,n,")
    assert csv[2].startswith(
        "m,v,b,miss_param,ask,5,1,0,1,1,0,0,1,1,0,0,0,5,3,0.600000,0.230720,0.882382,")
    markdown = first["triples.md"].read_text()
    assert "| m | v | b | miss_param | ask | 5 | 1 | 1 | 60.0% (3/5) [23.1, 88.2] |" in markdown
    assert "every case has weight 1" in markdown and "no group is pooled" in markdown
    assert pl.read_parquet(first["per_case.parquet"]).equals(per_case(ACTIONS, SCORES, CASES))


def test_a_runs_tables_are_its_rows_of_the_aggregate(tmp_path: Path) -> None:
    """The per-case rows and triples an `evaluate` job writes for its run (plain rows, no
    polars) are what aggregation reads and writes for it."""
    actions = [msgspec.structs.asdict(row) for row in ACTIONS]
    rows = plain.case_rows(actions, SCORES[::-1], CASES.reverse().iter_rows(named=True))
    expected = per_case(ACTIONS, SCORES, CASES)
    assert pl.DataFrame(rows, schema=expected.schema).equals(expected)
    (tmp_path / "actions.jsonl").write_bytes(plain.jsonl_bytes(actions, list(ACTION_SCHEMA)))
    (tmp_path / "run.jsonl").write_bytes(plain.jsonl_bytes(rows, plain.CASE_COLUMNS))
    aggregate([str(tmp_path / "actions.jsonl")], [str(tmp_path / "run.jsonl")],
              str(tmp_path / "all"))
    whole = write_outputs(tmp_path / "whole", ACTIONS, [expected])
    for name in FILES:
        assert (tmp_path / "all" / name).read_bytes() == whole[name].read_bytes(), name
    triples_csv = plain.csv_bytes(plain.triple_rows(rows), plain.TRIPLE_COLUMNS)
    assert triples_csv == whole["triples.csv"].read_bytes()
    assert triples_csv == triples(expected).write_csv(float_precision=plain.DIGITS).encode()


@pytest.mark.parametrize(("stage", "unwanted"), [
    ("aggregate", ("pydantic", "toolcalib.classify")),
    ("evaluate", ("polars", "pydantic")),
])
def test_a_stage_process_imports_only_what_it_uses(stage: str, unwanted: tuple[str, ...]) -> None:
    """Start-up is most of a scoring process's time: `aggregate` reads and writes tables (polars)
    without the classifier, `evaluate` builds its tables without polars; neither imports
    pydantic (τ²'s data model alone uses it; every record of toolcalib's is msgspec's)."""
    probe = (f"import sys, toolcalib.cli, toolcalib.stages.{stage};"
             f" print(' '.join(m for m in {unwanted!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == []
