"""The evaluate stage: the records it reads hold what classify and score need; one process
writes every category's actions and scores and the run's per-case table and triples."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.test_classify_paper import make_case, make_trajectory
from toolcalib.benchmarks.bfcl.checker import score_case
from toolcalib.benchmarks.bfcl.gold import GoldTrace
from toolcalib.classify import classify_trajectory, get_profile
from toolcalib.jsonio import InputError, dumps, read_records, write_jsonl
from toolcalib.metrics.inputs import ACTION_SCHEMA, actions_frame, read_table
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.records import Case, Emission, Trajectory, docs_json
from toolcalib.stages import evaluate as stage

TEXTS = {"c1": "I cannot do that: no tool supports it.", "c2": "Could you tell me the file name?"}


def irrelevance_case(case_id: str) -> Case:
    case = make_case(["refuse"], 0)
    tools = [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {}}}]
    return case.replace(id=case_id, category="irrelevance", tools_json=docs_json(tools),
                        multi_step=False)


def answer(case_id: str) -> Trajectory:
    run = make_trajectory([[Emission(text=TEXTS[case_id])]])
    return run.replace(case_id=case_id, category="irrelevance", variant="baseline")


def test_read_records_classify_and_score_as_the_records_written(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "cases.jsonl", [irrelevance_case("c1")])
    write_jsonl(tmp_path / "runs.jsonl", [answer("c1")])
    (case,) = read_records(tmp_path / "cases.jsonl", Case)
    (trajectory,) = read_records(tmp_path / "runs.jsonl", Trajectory)
    assert case == irrelevance_case("c1") and trajectory == answer("c1")
    assert case.tools == irrelevance_case("c1").tools and case.tools[0]["name"] == "f"
    profile = get_profile("paper")
    assert classify_trajectory(trajectory, case, profile) == \
        classify_trajectory(answer("c1"), irrelevance_case("c1"), profile)
    assert score_case(case, trajectory, None, None) == \
        score_case(irrelevance_case("c1"), answer("c1"), None, None)


def test_a_bad_case_line_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "c1"}\n{not json\n')
    with pytest.raises(InputError, match=r"cases.jsonl:1: field 'benchmark'"):
        read_records(path, Case)
    path.write_text("\n" + dumps(irrelevance_case("c1")) + "\n{not json\n")
    with pytest.raises(InputError, match=r"cases.jsonl:3: not valid JSON"):
        read_records(path, Case)


def test_one_process_writes_every_category_and_the_run_tables(tmp_path: Path,
                                                              bfcl_wheel: Path) -> None:
    files = {}
    for category, ids in {"irrelevance": ["c1"], "live_irrelevance": ["c2"]}.items():
        cases = [irrelevance_case(i).replace(category=category) for i in ids]
        runs = [answer(i).replace(category=category) for i in ids]
        for name, rows in {"cases": cases, "trajectories": runs,
                           "gold": [GoldTrace(case_id=i, category=category, turns=[])
                                    for i in ids]}.items():
            files.setdefault(name, []).append(str(tmp_path / name / f"{category}.jsonl"))
            write_jsonl(files[name][-1], rows)
        for name in ("actions", "scores"):
            files.setdefault(name, []).append(str(tmp_path / name / f"{category}.jsonl"))
    stage.run(profile="paper", benchmark="bfcl", source=str(bfcl_wheel), **files,
              per_case=str(tmp_path / "per_case.jsonl"), triples=str(tmp_path / "triples.csv"))
    expected = classify_trajectory(answer("c2").replace(category="live_irrelevance"),
                                   irrelevance_case("c2").replace(category="live_irrelevance"),
                                   get_profile("paper"))
    assert read_table(files["actions"][1], ACTION_SCHEMA).equals(actions_frame(expected))
    assert pl.read_ndjson(files["scores"][0])["passed"].to_list() == [True]
    per_case = read_table(tmp_path / "per_case.jsonl", CASE_SCHEMA)
    assert per_case.select("case_id", "emitted", "gold_emitted").rows() == [
        ("c1", "refuse", True), ("c2", "ask", False)]
    triples = pl.read_csv(tmp_path / "triples.csv")
    assert triples["category"].to_list() == ["irrelevance", "live_irrelevance"]
    assert triples["gar"].to_list() == [1.0, 0.0] and triples["acc"].to_list() == [1.0, 1.0]


def test_one_file_per_category_in_every_list(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="one file per category"):
        stage.run(profile="paper", benchmark="bfcl", source="s", cases=["a", "b"], gold=["a"],
                  trajectories=["a", "b"], actions=["a", "b"], scores=["a", "b"],
                  per_case="p", triples="t")


def test_score_rows_hold_every_score_column() -> None:
    case, run = irrelevance_case("c1"), answer("c1")
    rows = stage.score_rows([score_case(case, run, None, None)])
    assert list(rows[0]) == stage.SCORE_COLUMNS and rows[0]["details"] == "{}"
