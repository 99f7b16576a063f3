"""The report opens on the calibration leaderboard: first section of the page and of
summary.md, sortable by its headings (inline script), every number a link to an entry naming
the cells it pools, an undecided GAR printed as unknown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from toolcalib.metrics.leaderboard import leaderboard
from toolcalib.metrics.published import PUBLISHED, PUBLISHED_SCHEMA
from toolcalib.metrics.rows import CASES, bound_of
from toolcalib.metrics.triples import triples
from toolcalib.report import ReportTables, build_report, render_html
from toolcalib.report.build import render_summary
from toolcalib.report.leaderboard import TITLE

PUB, LOCAL = "pub-model", "local-model"


def case(model: str, benchmark: str, category: str, case_id: str, gold: str,
         hit: bool | None, passed: bool | None, unknown: int = 0) -> dict[str, Any]:
    """One per-case row (`hit`: GAR, None where undecided; `passed` None: excluded)."""
    scored = passed is not None
    row: dict[str, Any] = dict.fromkeys(CASES.names)
    return row | {
        "model": model, "variant": "baseline", "benchmark": benchmark, "category": category,
        "case_id": case_id, "gold_action": gold, "gold_turn": 0, "gold_turn_gold": gold,
        "emitted": "other", "gold_emitted": hit, "gold_turn_class": "other",
        "gold_turn_hit": hit, "tool_call_emitted": False, "gold_turn_tool_call": False,
        "emission_classes": "other", "gold_emitted_any_step": hit, "passed": passed,
        "scored": scored, "outcome": "completed" if scored else "error",
        "bound": bound_of(scored, passed, hit) if scored else None, "probes_fired": 0,
        "unclosed_reasoning_turns": 0, "ambiguous_turns": 0, "unknown_turns": unknown}


CASE_ROWS = [
    case(PUB, "bfcl", "irrelevance", "irrelevance_0", "refuse", True, True),
    case(PUB, "bfcl", "irrelevance", "irrelevance_1", "refuse", False, True),
    case(PUB, "bfcl", "irrelevance", "irrelevance_2", "refuse", None, True, unknown=1),
    case(PUB, "bfcl", "irrelevance", "irrelevance_3", "refuse", None, None),
    case(PUB, "bfcl", "multi_turn_miss_param", "multi_turn_miss_param_0", "ask", None, False,
         unknown=2),
    case(PUB, "bfcl", "multi_turn_miss_param", "multi_turn_miss_param_1", "ask", None, True,
         unknown=1),
    case(PUB, "tau2", "airline", "airline_0:trial0", "tool_call", True, True),
    case(PUB, "tau2", "airline", "airline_0:trial0#ask", "ask", False, True),
    case(PUB, "tau2", "airline", "airline_1:trial0", "refuse", False, False),
    case(LOCAL, "bfcl", "irrelevance", "irrelevance_0", "refuse", True, True),
]


def tables(board: bool = True) -> ReportTables:
    per_case = pl.DataFrame(CASE_ROWS, schema=CASES.schema())
    triple_table = triples(per_case)
    confusion = (per_case.filter("scored")
                 .group_by("model", "variant", "benchmark", "category", gold="gold_turn_gold",
                           emitted="gold_turn_class")
                 .agg(count=pl.len().cast(pl.Int64)).with_columns(level=pl.lit("gold_turn"))
                 .sort(pl.all()))
    records: dict[str, Any] = dict.fromkeys(PUBLISHED.names)
    published = pl.DataFrame(
        [records | {"model": PUB, "benchmark": "tau2", "category": "airline", "file": "a.json",
                    "index": i, "case_id": f"airline_{i}:trial0", "status": "scored",
                    "recorded_reward": float(i == 0), "reward": float(i == 0), "agrees": True}
         for i in range(2)], schema=PUBLISHED_SCHEMA)
    return ReportTables(triple_table, confusion, per_case, published=published,
                        leaderboard=leaderboard(triple_table, per_case, published)
                        if board else None)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = build_report(tables(), tmp_path_factory.mktemp("report"))
    return path.read_text(encoding="utf-8")


def _board(page: str) -> str:
    start = page.index('<section id="leaderboard">')
    return page[start:page.index("</section>", start)]


def test_the_page_opens_on_the_leaderboard(page: str) -> None:
    sections = re.findall(r'<section id="([^"]+)">', page)
    assert sections[:2] == ["leaderboard", "headline"]
    assert re.search(r'<nav><a href="#leaderboard">', page)
    assert f"<h2>{TITLE}</h2>" in _board(page)
    assert LOCAL not in _board(page).split("<details>")[0]  # published runs only


def test_it_is_sortable_by_any_heading_inline(page: str) -> None:
    board = _board(page)
    heads = re.findall(r'<th onclick="sortCol\(this\)"[^>]*>([^<]*)</th>', board)
    assert heads[:3] == ["model", "benchmark", "cases"] and "refuse GAR" in heads
    assert "confirm GAR" not in heads  # no row has a confirm cell
    rows = re.findall(r"<tr>(.*?)</tr>", board.split("<tbody>")[1].split("</tbody>")[0])
    assert len(rows) == 2 and all(r.count("<td") == len(heads) for r in rows)
    assert "function sortCol(h){sortRows(h.closest('table'),h.cellIndex);}" in page
    assert re.search(r"function sortRows\(t,i\)", page)
    assert not re.search(r"https?:|//|\bsrc=", page)  # nothing fetched


def test_every_number_links_to_an_entry_naming_its_cells(page: str) -> None:
    board = _board(page)
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "duplicate ids"
    missing = set(re.findall(r'href="#([^"]+)"', page)) - set(ids)
    assert not missing, f"links without a target: {sorted(missing)[:5]}"
    body = board.split("<tbody>")[1].split("</tbody>")[0]
    for cell in re.findall(r'<td class="num"[^>]*>(.*?)</td>', body):
        assert cell.startswith("<a href=\"#lb-") or cell.startswith("–<small>no such gold"), cell
    # the pooled refuse GAR of BFCL: its entry links to the cell's GAR audit entry (case ids)
    entry = re.search(r'<p id="lb-pub-model-bfcl-refuse_gar">(.*?)</p>', page)
    assert entry and "50.0% 1/2 [9.5, 90.5] 1 unknown" in entry.group(1)
    assert '<a href="#audit-pub-model-baseline-bfcl-irrelevance-gar">irrelevance: 1/2</a>' in (
        entry.group(1))
    listed = re.search(r'<p id="lb-pub-model-bfcl-unknown_turns">(.*?)</p>', page)
    assert listed and listed.group(1).endswith(
        "cases (turns): irrelevance_2 (1) multi_turn_miss_param_0 (2) "
        "multi_turn_miss_param_1 (1)")
    # each case once: the τ² row has 2 cases, its ask unit is not one
    assert re.search(r'<p id="lb-pub-model-tau2-n_cases">cases: 2 — ', page)


def test_an_undecided_gar_prints_as_unknown_not_zero(page: str) -> None:
    board = _board(page)
    row = re.search(r"<tr><td class=\"key\">pub-model</td><td class=\"key\">bfcl</td>(.*?)</tr>",
                    board)
    assert row
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    heads = re.findall(r'<th onclick="sortCol\(this\)"[^>]*>([^<]*)</th>', board)[2:]
    ask = dict(zip(heads, cells, strict=True))["ask GAR"]
    assert ask == ('<a href="#lb-pub-model-bfcl-ask_gar">unknown</a><small>(0 decided)</small>')
    assert "0.0%" not in ask


def test_summary_md_opens_on_it_too() -> None:
    text = render_summary(tables())
    heads = re.findall(r"^## (.*)$", text, flags=re.M)
    assert heads[:2] == [TITLE, "Calibration at a glance (baseline, real models)"]
    lines = [line for line in text.splitlines() if line.startswith("| pub-model | bfcl |")]
    assert len(lines) == 1 and "| unknown (0 decided) |" in lines[0]
    assert "| 50.0% (1/2) [9.5, 90.5] 1 unknown |" in lines[0]  # refuse GAR, pooled


def test_no_published_run_says_so() -> None:
    empty = tables()
    empty = ReportTables(empty.triples, empty.confusion, empty.per_case,
                         leaderboard=empty.leaderboard.clear() if empty.leaderboard is not None
                         else None)
    assert "no published run in this run" in _board(render_html(empty))
    assert '<section id="leaderboard">' not in render_html(tables(board=False))


def test_the_stages_write_it_and_open_the_page_on_it(tmp_path: Path) -> None:
    """aggregate (`--published`, `--recorded`) writes leaderboard.csv; report opens on it."""
    from toolcalib.metrics.published import RECORD_COLUMNS
    from toolcalib.metrics.rows import jsonl_bytes
    from toolcalib.stages.aggregate import run as aggregate
    from toolcalib.stages.report import run as report

    runs = tmp_path / "per_case.jsonl"
    runs.write_bytes(jsonl_bytes(CASE_ROWS, CASES.names))
    records = tmp_path / "airline.records.jsonl"
    records.write_bytes(jsonl_bytes(
        [dict.fromkeys(RECORD_COLUMNS) | {"model": PUB, "benchmark": "tau2",
                                          "category": "airline", "file": "a.json", "index": i,
                                          "case_id": f"airline_{i}:trial0",
                                          "recorded_reward": 1.0} for i in range(2)],
        RECORD_COLUMNS))
    recorded = tmp_path / "irrelevance.recorded.json"
    recorded.write_text(json.dumps({
        "model": PUB, "benchmark": "bfcl", "category": "irrelevance", "file": "s.json",
        "accuracy": 0.75, "correct_count": 3, "total_count": 4, "source": "score file"}))
    metrics = tmp_path / "metrics"
    aggregate([], [str(runs)], str(metrics), published=[str(records)], recorded=[str(recorded)])
    lines = (metrics / "leaderboard.csv").read_text().splitlines()
    assert [line.split(",")[:2] for line in lines[1:]] == [[PUB, "bfcl"], [PUB, "tau2"]]
    report(str(metrics), str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<section id="([^"]+)">', page)[:2] == ["leaderboard", "headline"]
    assert re.search(r'lb-pub-model-bfcl-recorded">75.0%</a><small>3/4</small><small>summary'
                     r"</small><small>1 of 2 categories</small>", page)  # irrelevance only
    assert re.search(r'lb-pub-model-tau2-recorded">100.0%</a><small>mean of 2</small>', page)


NODE_DOM = """
var table = {dataset: {}, tBodies: [{rows: DATA.map(function (r) {
  return {cells: r.map(function (c) { return {dataset: c.v === null ? {} : {v: c.v},
                                               textContent: c.t}; })};
}), appendChild: function (r) { this.rows.splice(this.rows.indexOf(r), 1); this.rows.push(r); }}]};
function addEventListener() {}
function order() { return table.tBodies[0].rows.map(function (r) {
  return r.cells[1].textContent; }); }
var out = [];
COLUMNS.forEach(function (i) {
  var th = {cellIndex: i, closest: function () { return table; }};
  sortCol(th); var up = order(); sortCol(th); out.push([up, order()]);
});
console.log(JSON.stringify(out));
"""
"""A stand-in for the browser's table (rows, cells' `data-v` and text, `appendChild`)."""


def test_the_inline_script_sorts_the_leaderboard(page: str) -> None:
    """The page's own script (`sortCol`) run by node on the table's cells: a heading sorts
    ascending, a second click descending; a rate by its value, unknown/absent last when
    descending (sort value -1), text columns by text."""
    import shutil
    import subprocess

    from toolcalib.report.page import SCRIPT

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the page's script")
    board = _board(page)
    heads = re.findall(r'<th onclick="sortCol\(this\)"[^>]*>([^<]*)</th>', board)
    body = board.split("<tbody>")[1].split("</tbody>")[0]
    data = [[{"v": v or None, "t": re.sub(r"<[^>]+>", "", text)}
             for v, text in re.findall(r'<td class="[a-z]+"(?: data-v="([^"]*)")?>(.*?)</td>',
                                       row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)]
    columns = [heads.index(h) for h in ("benchmark", "refuse GAR", "ask GAR", "cases")]
    script = (f"var DATA = {json.dumps(data)}; var COLUMNS = {json.dumps(columns)};\n"
              + SCRIPT + NODE_DOM)
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    order = json.loads(done.stdout)
    assert order == [
        [["bfcl", "tau2"], ["tau2", "bfcl"]],  # benchmark, as text
        [["tau2", "bfcl"], ["bfcl", "tau2"]],  # refuse GAR: 0.0 < 0.5
        [["bfcl", "tau2"], ["tau2", "bfcl"]],  # ask GAR: unknown (-1) < 0.0
        [["tau2", "bfcl"], ["bfcl", "tau2"]],  # cases: 2 < 5
    ]
