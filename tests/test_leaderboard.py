"""The calibration leaderboard (`metrics.leaderboard`) on small hand-built tables: pooling per
gold class, Wilson intervals, an undecided GAR, the recorded headline, the CSV's bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from toolcalib.cli import command_parser
from toolcalib.jsonio import InputError, atomic_write_bytes
from toolcalib.metrics.inputs import read_csv_table
from toolcalib.metrics.leaderboard import (
    LEADERBOARD,
    LEADERBOARD_SCHEMA,
    RECORDS_MEAN,
    SUMMARY,
    leaderboard,
    leaderboard_csv,
    leaderboard_rows,
    write_leaderboard,
)
from toolcalib.metrics.published import PUBLISHED, PUBLISHED_SCHEMA, read_recorded
from toolcalib.metrics.rows import CASES, TRIPLES, csv_bytes
from toolcalib.metrics.wilson import wilson
from toolcalib.metrics.write import parquet_bytes

PUB, LOCAL = "pub-model", "local-model"


def triple(model: str, benchmark: str, category: str, gold: str, n: int, gar: tuple[int, int],
           ter: int, acc: int, variant: str = "baseline", **counts: int) -> dict[str, Any]:
    """A triples row: `gar` is (k, gar_n); the columns not given are 0 or null."""
    row: dict[str, Any] = {c.name: 0 if c.dtype == "int" else None for c in TRIPLES.columns}
    row |= {"model": model, "variant": variant, "benchmark": benchmark, "category": category,
            "gold_action": gold, "n": n, "gar_k": gar[0], "gar_n": gar[1], "ter_k": ter,
            "acc_k": acc, "n_gar_unknown": n - gar[1], **counts}
    return row


TRIPLE_ROWS = [
    triple(PUB, "bfcl", "irrelevance", "refuse", 4, (1, 3), 2, 3, acc_without_gold=2),
    triple(PUB, "bfcl", "live_irrelevance", "refuse", 6, (5, 6), 0, 6, n_excluded=1,
           acc_without_gold=1),
    triple(PUB, "bfcl", "multi_turn_base", "tool_call", 5, (2, 5), 5, 1, gold_without_acc=1),
    triple(PUB, "bfcl", "multi_turn_miss_param", "ask", 3, (0, 0), 1, 2),
    triple(PUB, "bfcl", "irrelevance", "refuse", 4, (4, 4), 0, 4, variant="paraphrase"),
    triple(LOCAL, "bfcl", "irrelevance", "refuse", 2, (0, 2), 2, 0),
    triple(PUB, "tau2", "airline", "tool_call", 1, (1, 1), 1, 1),
    triple(PUB, "tau2", "airline", "ask", 1, (1, 1), 0, 1),
    triple(PUB, "tau2", "airline", "confirm", 2, (1, 2), 2, 1),
    triple("other-pub", "bfcl", "irrelevance", "refuse", 1, (1, 1), 0, 1),
]


def case(model: str, benchmark: str, case_id: str, scored: bool, passed: bool | None,
         unknown: int = 0, variant: str = "baseline") -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(CASES.names)
    return row | {"model": model, "variant": variant, "benchmark": benchmark,
                  "category": "airline" if benchmark == "tau2" else "irrelevance",
                  "case_id": case_id, "gold_action": "tool_call", "scored": scored,
                  "passed": passed, "outcome": "completed" if scored else "error",
                  "unknown_turns": unknown, "probes_fired": 0}


CASE_ROWS = [
    case(PUB, "tau2", "airline_0:trial0", True, True, unknown=2),
    case(PUB, "tau2", "airline_0:trial0#ask", True, True, unknown=2),  # a unit: not again
    case(PUB, "tau2", "airline_0:trial0#write1", True, False, unknown=2),
    case(PUB, "tau2", "airline_1:trial0", False, None),
    case(PUB, "bfcl", "irrelevance_0", True, True, unknown=1),
    case(PUB, "bfcl", "irrelevance_1", True, False),
    case(PUB, "bfcl", "irrelevance_2", True, True),
    case(PUB, "bfcl", "irrelevance_3", False, None),
    case(PUB, "bfcl", "irrelevance_0", True, False, unknown=9, variant="paraphrase"),
    case(LOCAL, "bfcl", "irrelevance_0", True, True, unknown=5),
]


def record(model: str, benchmark: str, category: str, recorded: float | None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(PUBLISHED.names)
    return row | {"model": model, "benchmark": benchmark, "category": category,
                  "file": f"{category}.json", "index": 0, "recorded_reward": recorded}


PUBLISHED_ROWS = [record(PUB, "tau2", "airline", r) for r in (1.0, 0.0, 1.0, None)] + [
    record(PUB, "bfcl", "irrelevance", 1.0), record("other-pub", "bfcl", "irrelevance", None)]


def headline(category: str, correct: int | None, total: int | None,
             benchmark: str = "bfcl") -> dict[str, Any]:
    return {"model": PUB, "benchmark": benchmark, "category": category,
            "file": f"BFCL_v4_{category}_score.json", "source": "score file",
            "accuracy": None if total is None else (correct or 0) / total,
            "correct_count": correct, "total_count": total}


HEADLINES = [headline("irrelevance", 3, 4), headline("live_irrelevance", 5, 6),
             headline("multi_turn_base", None, None), headline("airline", None, None, "tau2")]


def frames(tmp_path: Path, rows: list[dict[str, Any]] | None = None
           ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[Any]]:
    paths = []
    for i, entry in enumerate(HEADLINES):
        path = tmp_path / f"{i}.recorded.json"
        path.write_text(json.dumps(entry))
        paths.append(path)
    return (pl.DataFrame(rows or TRIPLE_ROWS, schema=TRIPLES.schema()),
            pl.DataFrame(CASE_ROWS, schema=CASES.schema()),
            pl.DataFrame(PUBLISHED_ROWS, schema=PUBLISHED_SCHEMA), read_recorded(paths))


def _rate(row: dict[str, Any], prefix: str, k: int, n: int) -> None:
    low, high = wilson(k, n)
    assert row[f"{prefix}_k"] == k
    assert row[prefix] == pytest.approx(k / n, abs=1e-6)  # rounded to `DIGITS` decimals
    assert row[f"{prefix}_lo"] == pytest.approx(low, abs=1e-6)
    assert row[f"{prefix}_hi"] == pytest.approx(high, abs=1e-6)


def test_rows_pool_each_gold_class_over_its_categories(tmp_path: Path) -> None:
    rows = leaderboard_rows(*frames(tmp_path))
    assert [(r["benchmark"], r["model"]) for r in rows] == [
        ("bfcl", "other-pub"), ("bfcl", PUB), ("tau2", PUB)]  # no local model, no variant
    bfcl = rows[1]
    assert bfcl["categories"] == "irrelevance|live_irrelevance|multi_turn_base|" \
                                 "multi_turn_miss_param"
    # refuse: irrelevance + live_irrelevance, each unit once; GAR over the decided units only
    assert (bfcl["refuse_cells"], bfcl["refuse_n"], bfcl["refuse_gar_n"]) == (2, 10, 9)
    _rate(bfcl, "refuse_gar", 6, 9)
    _rate(bfcl, "refuse_ter", 2, 10)
    _rate(bfcl, "refuse_acc", 9, 10)
    _rate(bfcl, "tool_call_gar", 2, 5)
    # ask: nothing decided -> GAR null with no interval, TER and Acc still over n
    assert (bfcl["ask_n"], bfcl["ask_gar_n"], bfcl["ask_gar_k"]) == (3, 0, 0)
    assert bfcl["ask_gar"] is bfcl["ask_gar_lo"] is bfcl["ask_gar_hi"] is None
    _rate(bfcl, "ask_acc", 2, 3)
    # no confirm cell on BFCL: 0 cells, every rate null
    assert (bfcl["confirm_cells"], bfcl["confirm_n"], bfcl["confirm_acc"]) == (0, 0, None)
    # unit counts summed over the cells
    assert (bfcl["n_gar_unknown"], bfcl["acc_without_gold"], bfcl["gold_without_acc"]) == (
        4, 3, 1)


def test_case_counts_take_each_case_once(tmp_path: Path) -> None:
    bfcl, tau2 = leaderboard_rows(*frames(tmp_path))[1:]
    assert (bfcl["n_cases"], bfcl["n_excluded"], bfcl["unknown_turns"]) == (3, 1, 1)
    _rate(bfcl, "acc", 2, 3)
    # the units airline_0:trial0#ask and #write1 are the same case's: counted in their gold
    # classes' cells, not again among the cases
    assert (tau2["n_cases"], tau2["n_excluded"], tau2["unknown_turns"]) == (1, 1, 2)
    _rate(tau2, "acc", 1, 1)
    assert (tau2["confirm_cells"], tau2["confirm_n"]) == (1, 2)
    _rate(tau2, "confirm_gar", 1, 2)


def test_recorded_is_the_benchmarks_own_headline(tmp_path: Path) -> None:
    other, bfcl, tau2 = leaderboard_rows(*frames(tmp_path))
    # BFCL: correct/total summed over the categories whose file records a summary
    assert (bfcl["recorded_correct"], bfcl["recorded_total"], bfcl["recorded_from"]) == (
        8, 10, SUMMARY)
    assert bfcl["recorded"] == pytest.approx(0.8)
    assert bfcl["recorded_categories"] == "irrelevance|live_irrelevance"
    # τ²: no summary; the mean recorded reward of its records (those with one) stands in
    assert (tau2["recorded_correct"], tau2["recorded_total"], tau2["recorded_from"]) == (
        None, 3, RECORDS_MEAN)
    assert tau2["recorded"] == pytest.approx(2 / 3, abs=1e-6)
    # nothing recorded at all
    assert other["recorded"] is other["recorded_from"] is other["recorded_total"] is None


def test_csv_bytes_are_sorted_and_stable(tmp_path: Path) -> None:
    expected = leaderboard_csv(leaderboard_rows(*frames(tmp_path)))
    shuffled = TRIPLE_ROWS[:]
    random.Random(7).shuffle(shuffled)
    assert leaderboard_csv(leaderboard_rows(*frames(tmp_path, shuffled))) == expected
    lines = expected.decode().splitlines()
    assert lines[0] == ",".join(LEADERBOARD.names) and len(lines) == 4
    assert [line.split(",")[:2] for line in lines[1:]] == [
        ["other-pub", "bfcl"], [PUB, "bfcl"], [PUB, "tau2"]]
    path = tmp_path / "leaderboard.csv"
    path.write_bytes(expected)
    assert read_csv_table(path, LEADERBOARD_SCHEMA).equals(leaderboard(*frames(tmp_path)))


def test_aggregation_writes_it_beside_the_tables_it_reads(tmp_path: Path) -> None:
    triples, per_case, published, recorded = frames(tmp_path)
    atomic_write_bytes(tmp_path / "triples.csv", csv_bytes(TRIPLE_ROWS, TRIPLES.names))
    atomic_write_bytes(tmp_path / "per_case.parquet", parquet_bytes(per_case, CASES))
    published.write_csv(tmp_path / "published.csv")
    path = write_leaderboard(tmp_path, recorded)
    assert path.read_bytes() == leaderboard_csv(leaderboard_rows(triples, per_case, published,
                                                                 recorded))
    args = command_parser("aggregate").parse_args(["--actions", "a", "--runs", "r",
                                      "--recorded", "x.recorded.json", "--out-dir", "o"])
    assert args.recorded == ["x.recorded.json"]
    args = command_parser("aggregate").parse_args(["--actions", "a", "--runs", "r",
                                      "--out-dir", "o"])
    assert list(args.recorded) == []


def test_no_published_run_no_row(tmp_path: Path) -> None:
    triples, per_case, _, _ = frames(tmp_path)
    empty = pl.DataFrame(schema=PUBLISHED_SCHEMA)
    assert leaderboard(triples, per_case, empty).height == 0
    assert leaderboard_csv([]) == (",".join(LEADERBOARD.names) + "\n").encode()


@pytest.mark.parametrize(("entry", "message"), [
    ({"correct_count": 3, "total_count": None}, "both be given or both null"),
    ({"correct_count": 5, "total_count": 4}, "0 <= correct_count <= total_count"),
    ({"extra": 1}, "not a recorded headline"),
    ({"total_count": "4"}, "not a recorded headline"),
])
def test_a_bad_recorded_file_fails_naming_it(tmp_path: Path, entry: dict[str, Any],
                                            message: str) -> None:
    path = tmp_path / "irrelevance.recorded.json"
    path.write_text(json.dumps(headline("irrelevance", 3, 4) | entry))
    with pytest.raises(InputError, match=message) as failed:
        read_recorded([path])
    assert str(path) in str(failed.value)


def test_a_cell_without_a_gold_class_fails(tmp_path: Path) -> None:
    rows = [*TRIPLE_ROWS, triple(PUB, "bfcl", "weird", "", 1, (0, 1), 0, 0)]
    with pytest.raises(InputError, match="gold class not of"):
        leaderboard_rows(*frames(tmp_path, rows))
