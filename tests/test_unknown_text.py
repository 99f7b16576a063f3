"""Text a published record did not keep is `unknown`, not empty: its emissions, its class in
every profile, the per-case nulls where the gold class could hide in it, GAR over the decided
cases only (TER and Acc over every scored case), the confusion column, the report's text and
the audit of such a cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from toolcalib.classify.base import NO_CONTEXT
from toolcalib.classify.judge import JudgeProfile
from toolcalib.classify.profiles import get_profile
from toolcalib.jsonio import dumps, parse_line
from toolcalib.metrics.confusion import confusion
from toolcalib.metrics.markdown import rate_text
from toolcalib.metrics.per_case import per_case
from toolcalib.metrics.rows import CASES, TRIPLE_COLUMNS, csv_bytes, triple_rows
from toolcalib.metrics.triples import triples
from toolcalib.metrics.write import parquet_bytes
from toolcalib.provenance.audit.artifacts import ARTIFACTS
from toolcalib.provenance.audit.main import main_audit
from toolcalib.provenance.audit.recompute import PER_CASE, TRIPLES
from toolcalib.provenance.lock import LOCK, MANIFEST, md5_file
from toolcalib.records import ACTION_CLASSES, ActionRow, Emission, ToolCall, Trajectory
from toolcalib.report.audit import case_lists, slugs
from toolcalib.report.page import triples_table

REAL = Path(__file__).parent / "data" / "real_trajectories"


# -- the record -------------------------------------------------------------------------------

def test_an_emission_at_its_default_is_written_as_before() -> None:
    emission = Emission(text="Done.", output_tokens=3)
    assert dumps(emission) == '{"text":"Done.","tool_calls":[],"structured":false,' \
        '"parse":"none","parse_error":null,"finish_reason":null,"input_tokens":null,' \
        '"output_tokens":3}'


def test_text_not_recorded_round_trips() -> None:
    emission = Emission(output_tokens=12, text_recorded=False)
    text = dumps(emission)
    assert text.endswith('"output_tokens":12,"text_recorded":false}')
    assert parse_line(text, Emission, "e.jsonl", 1) == emission


def test_trajectory_files_keep_their_bytes() -> None:
    lines = [line for path in sorted(REAL.glob("*.jsonl"))
             for line in path.read_text("utf-8").splitlines()]
    assert lines
    for number, line in enumerate(lines, 1):
        assert dumps(parse_line(line, Trajectory, "t.jsonl", number)) == line


# -- the class --------------------------------------------------------------------------------

class Refusing:
    """A judge backend that must never be asked."""

    name = "refusing"
    cacheable = True

    def identity(self) -> dict[str, str]:
        return {"backend": "refusing"}

    def generate_batch(self, requests: list[Any]) -> list[Any]:
        raise AssertionError(f"the judge was asked {len(requests)} request(s)")


@pytest.mark.parametrize("name", ["paper", "default", "judge"])
def test_every_profile_classes_an_unrecorded_output_unknown(name: str) -> None:
    profile = (JudgeProfile(Refusing(), get_profile("default")) if name == "judge"
               else get_profile(name))
    unrecorded = Emission(output_tokens=40, text_recorded=False)
    called = Emission(tool_calls=[ToolCall(name="ls")], structured=True, parse="ok",
                      text_recorded=False)
    profile.prepare([unrecorded, called])
    assert tuple(profile.classify(unrecorded, NO_CONTEXT)) == ("unknown", "unrecorded", "")
    assert profile.classify(called, NO_CONTEXT).action == "tool_call"
    # empty, recorded: no class
    assert profile.classify(Emission(text=""), NO_CONTEXT).action is None


def test_unknown_is_the_last_class() -> None:
    assert ACTION_CLASSES[-1] == "unknown"


# -- the tables -------------------------------------------------------------------------------

MP = ["tool_call", "ask"]  # miss_param: the gold turn 1 is ask


def actions(model: str, case_id: str, category: str, gold: list[str], gold_turn: int,
            turns: list[list[str]]) -> list[ActionRow]:
    """Action rows of one case; `turns[i]` lists turn i's emission classes."""
    rows = []
    for index, emitted in enumerate(turns):
        where = dict(model=model, variant="v", benchmark="b", case_id=case_id,
                     category=category, outcome="completed", scored=True, turn=index,
                     gold_action=gold[index], is_gold_turn=index == gold_turn, evidence="")
        rows += [ActionRow(**where, level="emission", step=step, action=action, rule="r")
                 for step, action in enumerate(emitted)]
        action = min(emitted, key=ACTION_CLASSES.index)
        rows.append(ActionRow(**where, level="turn", step=None, action=action, rule="r"))
    return rows


CASES_RUN = {  # case: (model, category, turns, passed)
    "only_unknown": ("m1", "miss_param", [["unknown"], ["unknown", "unknown"]], True),
    "asked": ("m2", "miss_param", [["tool_call", "unknown"], ["ask", "unknown"]], True),
    "called_over": ("m2", "miss_param", [["tool_call"], ["tool_call", "unknown"]], False),
    "hidden_before": ("m2", "miss_param", [["unknown"], ["tool_call", "unknown"]], False),
    "base_unknown": ("m2", "base", [["unknown"]], False),
}
ACTIONS = [row for case, (model, category, turns, _) in CASES_RUN.items()
           for row in actions(model, case, category, ["tool_call"] if category == "base" else MP,
                              0 if category == "base" else 1, turns)]
SCORES = [dict(model=model, variant="v", benchmark="b", case_id=case, category=category,
               scored=True, passed=passed, error_type=None if passed else "state_mismatch")
          for case, (model, category, _, passed) in CASES_RUN.items()]
GOLD = pl.DataFrame({"benchmark": ["b"] * 5, "case_id": list(CASES_RUN),
                     "gold_action": ["ask"] * 4 + ["tool_call"],
                     "gold_turn": [1] * 4 + [0]})


@pytest.fixture(scope="module")
def cases() -> pl.DataFrame:
    return per_case(ACTIONS, SCORES, GOLD)


@pytest.fixture(scope="module")
def cells(cases: pl.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["model"], r["category"]): r for r in triples(cases).iter_rows(named=True)}


def test_a_gold_hit_an_unknown_output_could_hide_is_null(cases: pl.DataFrame) -> None:
    got = {r["case_id"]: r for r in cases.iter_rows(named=True)}
    columns = ("gold_emitted", "gold_turn_hit", "gold_emitted_any_step", "bound",
               "unknown_turns")
    assert {case: tuple(row[c] for c in columns) for case, row in got.items()} == {
        "only_unknown": (None, None, None, None, 2),
        "asked": (True, True, True, None, 2),  # the recorded ask decides
        "called_over": (False, False, None, None, 1),  # a tool call outranks ask at turn 1
        "hidden_before": (None, False, None, None, 2),  # turn 0 could have asked
        "base_unknown": (False, False, False, None, 1),  # tool_call gold: decidable
    }


def test_gar_is_over_the_decided_cases_ter_and_acc_over_every_scored_case(
        cells: dict[tuple[str, str], dict[str, Any]]) -> None:
    alone = cells["m1", "miss_param"]
    assert (alone["n"], alone["n_gar_unknown"], alone["unknown_turns"]) == (1, 1, 2)
    for rate in ("gar", "gar_turn", "gar_emission"):
        assert (alone[f"{rate}_n"], alone[f"{rate}_k"], alone[rate], alone[f"{rate}_lo"]) == \
            (0, 0, None, None), rate
    assert (alone["ter"], alone["acc"], alone["acc_k"]) == (0.0, 1.0, 1)
    assert alone["acc_without_gold"] == 0  # passed, but GAR is undecided: no bound
    mixed = cells["m2", "miss_param"]
    assert (mixed["n"], mixed["n_gar_unknown"], mixed["unknown_turns"]) == (3, 1, 5)
    assert [(mixed[f"{r}_k"], mixed[f"{r}_n"]) for r in ("gar", "gar_turn", "gar_emission")] \
        == [(1, 2), (1, 3), (1, 1)]
    assert (mixed["gar"], mixed["ter_k"], mixed["acc_k"]) == (0.5, 3, 1)
    base = cells["m2", "base"]
    assert (base["gar_n"], base["gar"], base["n_gar_unknown"]) == (1, 0.0, 0)


def test_the_triples_put_each_denominator_before_its_rate() -> None:
    assert TRIPLE_COLUMNS[TRIPLE_COLUMNS.index("gar") - 2:][:5] == [
        "gar_n", "gar_k", "gar", "gar_lo", "gar_hi"]
    assert "ter_n" not in TRIPLE_COLUMNS and "acc_n" not in TRIPLE_COLUMNS
    assert TRIPLE_COLUMNS.index("n_gar_unknown") < TRIPLE_COLUMNS.index("acc_without_gold")


def test_confusion_has_an_unknown_column(cases: pl.DataFrame) -> None:
    frame = confusion(ACTIONS, cases).filter((pl.col("model") == "m1")
                                             & (pl.col("level") == "gold_turn"))
    assert frame["emitted"].to_list() == [*ACTION_CLASSES, "none"]
    assert dict(zip(frame["emitted"], frame["count"], strict=True))["unknown"] == 1


def test_the_report_says_how_many_are_unknown(cases: pl.DataFrame,
                                              cells: dict[tuple[str, str], dict[str, Any]]
                                              ) -> None:
    assert rate_text(cells["m1", "miss_param"], "gar") == "– (1 unknown)"
    assert rate_text(cells["m2", "miss_param"], "gar").startswith("50.0% (1/2; 1 unknown) [")
    assert rate_text(cells["m2", "miss_param"], "ter").startswith("100.0% (3/3) [")
    frame = triples(cases)
    keys = [tuple(r[k] for k in ("model", "variant", "benchmark", "category", "gold_action"))
            for r in frame.iter_rows(named=True)]
    case_lists(frame, cases)  # the per-case lists agree with every count
    html = triples_table(frame, slugs(keys))
    assert "<small>1 unknown</small>" in html and ">GAR unknown<" in html


# -- the audit --------------------------------------------------------------------------------

def _recorded_run(root: Path, cases: pl.DataFrame) -> None:
    """`cases` aggregated under `root` as a run recorded by DVC: every artifact of the cell's
    path present (stand-ins upstream of the metrics) and its md5 in dvc.lock."""
    metrics = root / "results" / "metrics"
    metrics.mkdir(parents=True)
    (root / TRIPLES).write_bytes(csv_bytes(triple_rows(cases.iter_rows(named=True)),
                                           TRIPLE_COLUMNS))
    (root / PER_CASE).write_bytes(parquet_bytes(cases, CASES))
    (root / MANIFEST).write_text(json.dumps({"models": {"m1": {"backend": "replay"}}}))
    fields = dict(model="m1", variant="v", benchmark="b", category="miss_param",
                  release="release.zip")
    outs = []
    for role, template in ARTIFACTS:
        if role == "weights":
            continue
        path = root / template.format(**fields)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{role}\n")
        outs.append({"path": template.format(**fields), "md5": md5_file(path)})
    (root / LOCK).write_text(yaml.safe_dump({"schema": "2.0", "stages": {
        "all": {"cmd": "toolcalib aggregate", "deps": [], "outs": outs}}}))


@pytest.mark.parametrize("metric", ["gar", "gar_turn", "gar_emission", "n_gar_unknown", "acc"])
def test_the_audit_of_an_undecided_cell_agrees(tmp_path: Path, cases: pl.DataFrame,
                                               metric: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _recorded_run(tmp_path, cases)
    code = main_audit(["--root", str(tmp_path), "--json", "m1", "v", "b", "miss_param", metric])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["problems"]
    numbers = report["metric"]["recomputed"]
    expected = {"n_gar_unknown": (1, 1), "acc": (1, 1)}.get(metric, (0, 0))
    assert (numbers["k"], numbers["n"]) == expected
