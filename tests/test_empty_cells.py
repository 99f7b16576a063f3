"""Every stage survives empty and all-excluded cells (issue 14, item 2).

Built on purpose, through the real stage functions: a model whose every request failed (each
trajectory `error`, no scored case at all), a variant with no paired case, a category left empty
by `limit` (no case, empty files), and no case anywhere. Rates with n = 0 are null (never 0,
never NaN), counts 0, Wilson intervals null; the report says "n = 0" and plots nothing for them.
The same builders show malformed call attempts counted (item 4).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from toolcalib.execute.textcalls import decode_emission
from toolcalib.jsonio import parse_line, write_jsonl
from toolcalib.metrics.confusion import CONFUSION_SCHEMA
from toolcalib.metrics.inputs import read_csv_table
from toolcalib.metrics.paired import SHIFT_SCHEMA, compare_models, shift_table
from toolcalib.metrics.rows import COUNTS, RATES
from toolcalib.metrics.triples import TRIPLE_SCHEMA
from toolcalib.provenance.audit.main import audit
from toolcalib.provenance.audit.recompute import metrics_of
from toolcalib.provenance.audit.render import render
from toolcalib.records import (
    NO_DOCS,
    Case,
    Emission,
    Message,
    SourceRef,
    Step,
    Trajectory,
    Turn,
    TurnTrace,
)
from toolcalib.stages.aggregate import run as aggregate
from toolcalib.stages.evaluate import run as evaluate
from toolcalib.stages.report import run as report
from toolcalib.stages.validate import run as validate

BENCH = "bfcl"
CATEGORIES = ("irrelevance", "live_irrelevance")
SOURCE = SourceRef(artifact="a", artifact_sha256="0" * 64, file="f", line=1, line_sha256="0" * 64)
FAILED = "1 failed requests (not stored): connection refused"


def case(case_id: str, category: str) -> Case:
    turn = Turn(index=0, messages=[Message(role="user", content="What is 2 + 2?")],
                gold_action="refuse")
    return Case(id=case_id, benchmark=BENCH, category=category, turns=[turn], tools_json=NO_DOCS,
                gold_action="refuse", gold_turn=0, multi_step=False, source=SOURCE)


def trajectory(model: str, variant: str, case_id: str, category: str, text: str | None
               ) -> Trajectory:
    """`text`: the one emission's text, decoded as `generate` decodes it (no tools visible);
    None: the request failed (outcome `error`)."""
    turns = [] if text is None else [TurnTrace(index=0, ended="single_step", steps=[
        Step(index=0, emission=decode_emission(Emission(text=text), None, []))])]
    return Trajectory(case_id=case_id, benchmark=BENCH, category=category, model=model,
                      variant=variant, outcome="completed" if text is not None else "error",
                      error=None if text is not None else FAILED, turns=turns, messages=[])


def build_run(root: Path, model: str, variant: str,
              answers: dict[str, dict[str, str | None]]) -> tuple[list[str], str]:
    """Write one run's inputs under `root` in the pipeline's layout and evaluate it; `answers`:
    category -> case id -> the emission's text (None: failed). Returns its action tables and
    its per-case table."""
    release = root / "release.whl"
    release.touch()
    files: dict[str, list[str]] = {name: [] for name in
                                   ("cases", "gold", "trajectories", "actions", "scores")}
    for category in CATEGORIES:
        cases = answers.get(category, {})
        where = f"{model}/{variant}/{BENCH}/{category}.jsonl"
        paths = {"cases": f"results/cases/{BENCH}/{category}.jsonl",
                 "gold": f"results/gold/{BENCH}/{category}.jsonl",
                 "trajectories": f"results/trajectories/{where}",
                 "actions": f"results/actions/{where}", "scores": f"results/scores/{where}"}
        for role, relative in paths.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            files[role].append(str(root / relative))
        write_jsonl(root / paths["cases"], [case(c, category) for c in cases])
        (root / paths["gold"]).write_text("")
        write_jsonl(root / paths["trajectories"],
                    [trajectory(model, variant, c, category, text) for c, text in cases.items()])
    run_dir = root / "results" / "runs" / model / variant / BENCH
    run_dir.mkdir(parents=True, exist_ok=True)
    evaluate("default", BENCH, str(release), files["cases"], files["gold"],
             files["trajectories"], files["actions"], files["scores"],
             str(run_dir / "per_case.jsonl"), str(run_dir / "triples.csv"))
    return files["actions"], str(run_dir / "per_case.jsonl")


def build(root: Path, runs: dict[tuple[str, str], dict[str, dict[str, str | None]]]) -> Path:
    """Evaluate, aggregate and report `runs`; the metrics folder."""
    actions, per_case = [], []
    for (model, variant), answers in runs.items():
        found, table = build_run(root, model, variant, answers)
        actions += found
        per_case.append(table)
    metrics = root / "results" / "metrics"
    aggregate(actions, per_case, str(metrics))
    report(str(metrics), str(root / "results" / "report"))
    (root / "dvc.lock").write_text("stages: {}\n")
    return metrics


REFUSED = "I cannot answer that: no tool does arithmetic."
ANSWERED = "4"
ALL_FAILED = {"irrelevance": {"irrelevance_0": None, "irrelevance_1": None}}
MIXED = {
    ("model-ok", "baseline"): {"irrelevance": {"irrelevance_0": REFUSED,
                                               "irrelevance_1": ANSWERED}},
    ("model-ok", "sri"): ALL_FAILED,  # no paired case for the variant
    ("model-down", "baseline"): ALL_FAILED,  # every request failed: no scored case at all
    # a category empty after `limit` (live_irrelevance: no case, empty files) and a run
    # with no case at all
    ("model-none", "baseline"): {},
}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    build(root, MIXED)
    return root


def test_all_excluded_cells_have_null_rates_and_zero_counts(mixed: Path) -> None:
    metrics = mixed / "results" / "metrics"
    triples = read_csv_table(metrics / "triples.csv", TRIPLE_SCHEMA)
    cells = {(r["model"], r["variant"], r["category"]): r for r in triples.iter_rows(named=True)}
    assert sorted(cells) == [("model-down", "baseline", "irrelevance"),
                             ("model-ok", "baseline", "irrelevance"),
                             ("model-ok", "sri", "irrelevance")]
    for key in [("model-down", "baseline", "irrelevance"), ("model-ok", "sri", "irrelevance")]:
        row = cells[key]
        assert (row["n"], row["n_excluded"], row["n_error"]) == (0, 2, 2), key
        assert all(row[c] == 0 for c in COUNTS if c not in ("n_excluded", "n_error")), key
        for rate in RATES:
            assert row[f"{rate}_k"] == 0, (key, rate)
            assert row[rate] is None and row[f"{rate}_lo"] is None and row[f"{rate}_hi"] is None
    ok = cells[("model-ok", "baseline", "irrelevance")]
    assert (ok["n"], ok["gar_k"], ok["acc_k"], ok["acc"]) == (2, 1, 2, 1.0)
    tree = json.loads((metrics / "metrics.json").read_text())
    down = tree["model-down"]["baseline"][BENCH]["irrelevance"]
    assert down["n"] == 0 and down["gar"] is None and down["acc_lo"] is None
    for name in ("triples.csv", "metrics.json", "shift.csv", "confusion.csv", "triples.md"):
        assert not re.search(r"\b(nan|inf)\b", (metrics / name).read_text(), re.I), name
    assert "| model-down | baseline | bfcl | irrelevance | refuse | 0 | 2 | 0 | – (n = 0) |" in (
        metrics / "triples.md").read_text()


def test_confusion_and_shift_keep_their_types(mixed: Path) -> None:
    metrics = mixed / "results" / "metrics"
    confusion = read_csv_table(metrics / "confusion.csv", CONFUSION_SCHEMA)
    assert set(confusion["model"].to_list()) == {"model-ok"}  # scored cases only
    assert set(confusion["variant"].to_list()) == {"baseline"}
    shift = read_csv_table(metrics / "shift.csv", SHIFT_SCHEMA)
    assert shift.schema == pl.Schema(SHIFT_SCHEMA)
    assert shift["metric"].to_list() == ["gar", "ter", "acc"]
    for row in shift.iter_rows(named=True):
        assert (row["model"], row["variant"], row["n_pairs"]) == ("model-ok", "sri", 0)
        assert (row["n_unpaired_baseline"], row["n_unpaired_variant"]) == (2, 2)
        assert row["rate_baseline"] is None and row["rate_variant"] is None
        assert row["delta"] is None and (row["b01"], row["b10"]) == (0, 0)


def test_the_report_shows_n_0_and_plots_nothing_for_it(mixed: Path) -> None:
    page = (mixed / "results" / "report" / "index.html").read_text()
    # model-ok's baseline profile, the GAR vs Acc plane (the headline: baseline) and one
    # heatmap (model-ok, its baseline panel); no shift plot: no pair
    assert page.count("<svg") == 3
    assert page.count('id="profile-') == 1 and page.count('id="heatmap-') == 1
    assert "no scored case, no profile: model-down · baseline" in page
    assert "n = 0, no point: model-down · baseline · bfcl · irrelevance" in page
    assert "no scored case, no heatmap panel: model-down · baseline; model-ok · sri" in page
    assert "no paired case, no plot: model-ok · sri" in page
    cell = re.search(r'id="cell-model-down-baseline-bfcl-irrelevance-gar">(.*?)</td>', page)
    assert cell and cell.group(1) == (
        '–<small><a href="#audit-model-down-baseline-bfcl-irrelevance-n">n = 0</a></small>')
    assert "NaN" not in page and "nan%" not in page
    summary = (mixed / "results" / "report" / "summary.md").read_text()
    assert "– (n = 0)" in summary
    assert "- model-ok · sri: no paired case, no comparison" in summary


def test_audit_recomputes_an_all_excluded_cell(mixed: Path) -> None:
    triples = read_csv_table(mixed / "results" / "metrics" / "triples.csv", TRIPLE_SCHEMA)
    cell = ("model-down", "baseline", BENCH, "irrelevance")
    for metric in metrics_of(triples.columns):
        got = audit(mixed, *cell, metric)["metric"]
        assert got["matches"], (metric, got)
        if metric in RATES:
            assert got["recomputed"] == {"value": None, "k": 0, "n": 0, "lo": None, "hi": None}
    detail = audit(mixed, *cell, "gar", case="irrelevance_1")
    assert detail["case"]["outcome"] == "error" and FAILED in detail["case"]["error"]
    assert not detail["case"]["in_denominator"]
    assert detail["case"]["verdict"]["scored"] is False
    text = render(detail)
    assert "gar = -  (k=0, n=0)  95% Wilson [-, -]" in text
    assert "MATCHES the table" in text


def test_every_stage_writes_its_outputs_with_no_scored_case_anywhere(tmp_path: Path) -> None:
    """The reported crash: one model, every request failed; `report` read a header-only
    confusion.csv as text and failed summing its counts."""
    metrics = build(tmp_path, {("model-down", "baseline"): ALL_FAILED,
                               ("model-down", "sri"): ALL_FAILED})
    assert (metrics / "confusion.csv").read_text().count("\n") == 1  # the header only
    page = (tmp_path / "results" / "report" / "index.html").read_text()
    assert page.count("<svg") == 0
    assert "n = 0, no point: model-down · baseline" in page
    assert "no paired case, no plot: model-down · sri" in page
    triples = read_csv_table(metrics / "triples.csv", TRIPLE_SCHEMA)
    assert triples["n"].to_list() == [0, 0] and triples["gar"].null_count() == 2


def test_no_case_at_all(tmp_path: Path) -> None:
    metrics = build(tmp_path, {("model-none", "baseline"): {}, ("model-none", "sri"): {}})
    triples = read_csv_table(metrics / "triples.csv", TRIPLE_SCHEMA)
    assert triples.height == 0
    assert pl.read_parquet(metrics / "per_case.parquet").height == 0
    assert json.loads((metrics / "metrics.json").read_text()) == {}
    assert (tmp_path / "results" / "report" / "index.html").read_text().count("<svg") == 0
    aggregate([], [], str(tmp_path / "nothing"))  # no run at all
    assert (tmp_path / "nothing" / "shift.csv").read_text().startswith("model,variant,")


def test_paired_comparisons_without_pairs(mixed: Path) -> None:
    per_case = pl.read_parquet(mixed / "results" / "metrics" / "per_case.parquet")
    versus = compare_models(per_case, "model-ok", "model-down")
    assert set(versus["n_pairs"].to_list()) == {0}
    assert versus["rate_a"].null_count() == versus.height == 3
    nothing = per_case.clear()
    assert shift_table(nothing).schema == pl.Schema(SHIFT_SCHEMA)
    assert compare_models(nothing, "a", "b").height == 0


def test_validation_of_a_one_class_corpus(tmp_path: Path) -> None:
    """Classes with no row and no prediction have null P/R/F1 (not NaN); kappa is null when
    chance agreement is 1; every file is written."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({
        "id": "only", "text": "[api.cd(folder='x')]", "structured_calls": False,
        "parse": "malformed", "label": "malformed", "reason": "r", "source": "hand"}) + "\n")
    validate(str(corpus), ["paper", "default"], str(tmp_path / "out"))
    summary = pl.read_csv(tmp_path / "out" / "classifier_summary.csv")
    assert summary["source"].to_list() == ["all", "hand"] * 2
    assert summary["accuracy"].to_list() == [1.0] * 4
    assert summary["kappa"].null_count() == 4
    table = pl.read_csv(tmp_path / "out" / "classifier_validation.csv", infer_schema_length=None)
    others = table.filter(pl.col("class") != "malformed")
    assert others["f1"].null_count() == others.height and set(others["support"]) == {0}
    markdown = (tmp_path / "out" / "classifier_validation.md").read_text()
    assert "| paper | all | 1 | 1.000 | 1.000 | – |" in markdown
    assert "nan" not in markdown.lower()



def test_malformed_call_attempts_are_counted(tmp_path: Path) -> None:
    """Issue 14 item 4, through the same stages: an emission calling what is not a plain tool
    name is decoded `malformed`, classed so, counted in the confusion table and the per-case
    classes, and is no tool call (TER) and no call for the irrelevance grader."""
    texts = {"irrelevance_0": 'api.cd(folder="document")', "irrelevance_1": 'tools["ls"]()',
             "irrelevance_2": "[a.b(c=1), d()]", "irrelevance_3": REFUSED}
    metrics = build(tmp_path, {("m", "baseline"): {"irrelevance": texts}})
    stored = [parse_line(line, Trajectory, "x", 1).turns[0].steps[0].emission.parse for line in
              (tmp_path / "results/trajectories/m/baseline/bfcl/irrelevance.jsonl").open()]
    assert stored == ["malformed"] * 3 + ["none"]
    per_case = pl.read_parquet(metrics / "per_case.parquet")
    assert per_case["emitted"].to_list() == ["malformed"] * 3 + ["refuse"]
    assert per_case["tool_call_emitted"].to_list() == [False] * 4
    assert per_case["passed"].to_list() == [True] * 4  # no valid call: BFCL passes them
    confusion = read_csv_table(metrics / "confusion.csv", CONFUSION_SCHEMA).filter(
        pl.col("level") == "gold_turn")
    counts = dict(zip(confusion["emitted"], confusion["count"], strict=True))
    assert (counts["malformed"], counts["refuse"], counts["tool_call"]) == (3, 1, 0)
    row = read_csv_table(metrics / "triples.csv", TRIPLE_SCHEMA).row(0, named=True)
    assert (row["n"], row["ter_k"], row["gar_k"], row["acc_without_gold"]) == (4, 0, 1, 3)
