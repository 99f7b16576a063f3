"""The report's first section: the published runs' calibration leaderboard
(`metrics.leaderboard`), as a sortable HTML table whose every number links to an entry naming
the cells (and their audit entries) it pools, and as a markdown table."""

from __future__ import annotations

from html import escape
from typing import Any

import polars as pl

from toolcalib.metrics.leaderboard import (
    POOLED,
    RECORDS_MEAN,
    SUMMARY,
    VARIANT,
)
from toolcalib.metrics.markdown import line
from toolcalib.metrics.rows import ACC_WITHOUT_GOLD, CELL_KEYS, GOLD_WITHOUT_ACC
from toolcalib.records import GOLD_CLASSES
from toolcalib.report.audit import Key, audit_id, audited, natural, slugs

TITLE = f"Calibration leaderboard: published runs ({VARIANT})"
RATE_NAMES = {"gar": "GAR", "ter": "TER", "acc": "Acc"}
CASE_COUNTS = {"n_cases": "cases", "n_excluded": "excluded", "unknown_turns": "unknown turns"}
"""Counts of the row's cases, each once."""
UNIT_COUNTS = {"n_gar_unknown": "GAR unknown", ACC_WITHOUT_GOLD: "Acc>GAR",
               GOLD_WITHOUT_ACC: "GAR>Acc"}
"""Counts of the row's units, summed over its cells."""
CELL_METRIC = {"n_cases": "n", "n_excluded": "n_excluded", "acc": "acc"}
"""The per-cell audit entry behind a case count of the row."""
READING = (
    "One row per published run and benchmark, under baseline. Per gold class, GAR, TER and Acc "
    "are pooled over the benchmark's categories of that class: every scored unit weighs 1 (a "
    "case; on τ² also a case's ask unit and each write's confirm unit), so a large category "
    "weighs more than a small one. GAR is over the units whose GAR is decided (the record kept "
    "the outputs that could hold the gold class); \"unknown (0 decided)\" where none is. TER and "
    "Acc are over every scored unit; k/n and the 95% Wilson interval under each rate. Cases, "
    "excluded (infrastructure errors, in no denominator), unknown turns (outputs the record did "
    "not keep) and Acc (cases) count each case once; GAR unknown, Acc>GAR and GAR>Acc count "
    "units. Recorded: the benchmark's own headline as its files record it (summary: "
    "correct/total summed over the categories that record one; records mean: the mean "
    "recorded reward of the published records where no summary is recorded), not recomputed "
    "and not counted our way (e.g. BFCL's counts inference errors). Click a heading to sort; "
    "every number links to the cells it pools.")


def golds(board: pl.DataFrame) -> list[str]:
    """The gold classes some row has a cell of, in `GOLD_CLASSES` order."""
    return [g for g in GOLD_CLASSES if board.height and int(board[f"{g}_cells"].sum() or 0)]


def row_slugs(board: pl.DataFrame) -> dict[tuple[str, str], str]:
    """A page-unique id fragment per (model, benchmark) row: `<model>-<benchmark>`, sanitized
    as the cells' (`audit.slugs`, which leaves out a key's last part, here empty, where the
    rest is unique)."""
    keys: list[Key] = [(m, b, "") for m, b in board.select("model", "benchmark").iter_rows()]
    return {(key[0], key[1]): slug for key, slug in slugs(keys).items()}


def entry_id(slug: str, metric: str) -> str:
    return f"lb-{slug}-{metric}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def rate_text(row: dict[str, Any], prefix: str, n: int, gar: bool = False
              ) -> tuple[str, list[str]]:
    """A pooled rate's (main text, small lines): `62.5%`, `5/8`, `[30.6, 86.3]`; GAR with no
    decided unit `unknown (0 decided)`; n = 0 `–`, `n = 0`."""
    if gar and n == 0 and row[prefix.removesuffix("_gar") + "_n"]:
        return "unknown", ["(0 decided)"]
    if row[prefix] is None:
        return "–", [f"n = {n}"]
    return f"{_pct(row[prefix])}%", [f"{row[prefix + '_k']}/{n}",
                                      f"[{_pct(row[prefix + '_lo'])}, {_pct(row[prefix + '_hi'])}]"]


def recorded_text(row: dict[str, Any]) -> tuple[str, list[str]]:
    """The recorded headline's (text, small lines): how it was recorded, and over how many of
    the row's categories where not all of them."""
    if row["recorded"] is None:
        return "–", ["none recorded"]
    recorded = set((row["recorded_categories"] or "").split("|"))
    cells = set((row["categories"] or "").split("|")) - {""}
    part = [] if recorded >= cells else [f"{len(recorded & cells)} of {len(cells)} categories"]
    if row["recorded_from"] == SUMMARY:
        return (f"{_pct(row['recorded'])}%",
                [f"{row['recorded_correct']}/{row['recorded_total']}", SUMMARY, *part])
    return (f"{_pct(row['recorded'])}%",
            [f"mean of {row['recorded_total']}", RECORDS_MEAN, *part])


def _columns(shown: list[str]) -> list[tuple[str, str]]:
    """(metric, heading) of the table's number columns, in order."""
    return [*CASE_COUNTS.items(), ("n_gar_unknown", UNIT_COUNTS["n_gar_unknown"]),
            *((f"{g}_{r}", f"{g} {RATE_NAMES[r]}") for g in shown for r in POOLED),
            (ACC_WITHOUT_GOLD, "Acc>GAR"), (GOLD_WITHOUT_ACC, "GAR>Acc"),
            ("acc", "Acc (cases)"), ("recorded", "recorded")]


def _number(row: dict[str, Any], metric: str) -> tuple[str, list[str], Any]:
    """A cell's (text, small lines, sort value)."""
    if metric == "recorded":
        text, small = recorded_text(row)
        return text, small, row["recorded"]
    if metric == "acc":
        text, small = rate_text(row, "acc", row["n_cases"])
        return text, small, row["acc"]
    gold, _, rate = metric.rpartition("_")
    if gold in GOLD_CLASSES and rate in POOLED:
        if not row[f"{gold}_cells"]:
            return "–", ["no such gold"], None
        n = row[f"{gold}_gar_n"] if rate == "gar" else row[f"{gold}_n"]
        text, small = rate_text(row, metric, n, gar=rate == "gar")
        if rate == "gar" and row[f"{gold}_n"] > n > 0:
            small.append(f"{row[f'{gold}_n'] - n} unknown")
        return text, small, row[metric]
    return str(row[metric]), [], row[metric]


def table(board: pl.DataFrame) -> str:
    """The leaderboard as a sortable table (the page's `sortCol`); each number links to its
    entry in `entries`."""
    shown, slug_of = golds(board), row_slugs(board)
    columns = _columns(shown)
    heads = ["model", "benchmark", *(head for _, head in columns)]
    head = "<thead><tr>" + "".join(
        f'<th onclick="sortCol(this)" title="sort">{escape(h)}</th>' for h in heads
    ) + "</tr></thead><tbody>"
    lines = ['<div class="wide"><table class="board">', head]
    for row in board.iter_rows(named=True):
        slug = slug_of[(row["model"], row["benchmark"])]
        cells = [f'<td class="key">{escape(row[k]).replace("_", "_<wbr>")}</td>'
                 for k in ("model", "benchmark")]
        for metric, _ in columns:
            text, small, value = _number(row, metric)
            shown_text = (escape(text) if text == "–" and small == ["no such gold"]
                          else f'<a href="#{entry_id(slug, metric)}">{escape(text)}</a>')
            cells.append(f'<td class="num" data-v="{-1 if value is None else value}">'
                         f"{shown_text}{''.join(f'<small>{escape(s)}</small>' for s in small)}"
                         "</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table></div>")
    return "\n".join(lines)


def _case_counts(per_case: pl.DataFrame) -> dict[Key, dict[str, int]]:
    """Per cell under `VARIANT`, its cases' counts (`CELL_METRIC`), each case once (units
    `<case>#...` left out)."""
    own = per_case.filter((pl.col("variant") == VARIANT)
                          & ~pl.col("case_id").str.contains("#", literal=True))
    scored = pl.col("scored").fill_null(False)
    grouped = own.group_by(CELL_KEYS).agg(
        scored.sum().alias("n_cases"), (~scored).sum().alias("n_excluded"),
        (scored & pl.col("passed").fill_null(False)).sum().alias("acc"))
    return {tuple(r[k] for k in CELL_KEYS): {m: int(r[m]) for m in CELL_METRIC}
            for r in grouped.iter_rows(named=True)}


def _unknown_cases(per_case: pl.DataFrame) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """Per (model, benchmark) under `VARIANT`, (case id, unknown turns) of its scored cases
    with an unknown turn, each case once."""
    if "unknown_turns" not in per_case.columns:  # a table from before the column
        return {}
    hit = per_case.filter(
        (pl.col("variant") == VARIANT) & ~pl.col("case_id").str.contains("#", literal=True)
        & pl.col("scored").fill_null(False) & (pl.col("unknown_turns") > 0))
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for model, benchmark, case_id, turns in hit.select(
            "model", "benchmark", "case_id", "unknown_turns").iter_rows():
        out.setdefault((model, benchmark), []).append((case_id, turns))
    return {key: sorted(cases, key=lambda c: natural(c[0])) for key, cases in out.items()}


def entries(board: pl.DataFrame, triples: pl.DataFrame, per_case: pl.DataFrame,
            slug_of: dict[Key, str]) -> str:
    """Per row, an entry per number: what it counts and the cells it pools, each linked to
    that cell's audit entry (the case ids behind it); the case ids with unknown turns."""
    audit = set(audited(triples.columns))
    cells = triples.filter(pl.col("variant") == VARIANT)
    counts, unknown = _case_counts(per_case), _unknown_cases(per_case)
    parts, slug_rows = [], row_slugs(board)
    for row in board.iter_rows(named=True):
        slug = slug_rows[(row["model"], row["benchmark"])]
        mine = cells.filter((pl.col("model") == row["model"])
                            & (pl.col("benchmark") == row["benchmark"])).iter_rows(named=True)
        pooled: dict[str, list[str]] = {}
        for r in mine:
            key = tuple(r[k] for k in CELL_KEYS)
            cell, name = slug_of.get(key), f"{r['category']} · {r['gold_action']}"

            def link(metric: str, text: str, cell: str | None = cell) -> str:
                if cell is None:
                    return escape(text)
                target = audit_id(cell, metric) if metric in audit else f"audit-{cell}"
                return f'<a href="#{target}">{escape(text)}</a>'

            for metric, source in CELL_METRIC.items():  # cells holding cases, not units
                count = counts[key][metric] if key in counts else 0
                if key in counts and (count or metric != "n_excluded"):
                    pooled.setdefault(metric, []).append(link(source, f"{name}: {count}"))
            for metric in UNIT_COUNTS:
                if r[metric]:
                    pooled.setdefault(metric, []).append(link(metric, f"{name}: {r[metric]}"))
            for rate in POOLED:
                n = r["gar_n"] if rate == "gar" else r["n"]
                pooled.setdefault(f"{r['gold_action']}_{rate}", []).append(
                    link(rate, f"{r['category']}: {r[f'{rate}_k']}/{n}"))
        items = []
        for metric, heading in _columns(golds(board)):
            text, small, _ = _number(row, metric)
            if metric == "recorded":
                where = ('the published records (<a href="#published">published runs</a>)'
                         if row["recorded_from"] == RECORDS_MEAN
                         else "the import's &lt;category&gt;.recorded.json")
                body = (f"from {where}; categories: "
                        f"{escape(row['recorded_categories'] or 'none')}")
            elif metric == "unknown_turns":
                listed = unknown.get((row["model"], row["benchmark"]), [])
                body = ("cases (turns): " + escape(" ".join(f"{c} ({t})" for c, t in listed))
                        if listed else "no case")
            else:
                body = "pooled from: " + (", ".join(pooled.get(metric, [])) or "no cell")
                if metric in CELL_METRIC:
                    body += " (each case once: its units &lt;case&gt;#… are not counted)"
            items.append(f'<p id="{entry_id(slug, metric)}">{escape(heading)}: '
                         f"{escape(' '.join([text, *small]))} — {body}</p>")
        parts.append(f'<details class="audit" id="lb-{slug}"><summary>'
                     f"{escape(row['model'])} · {escape(row['benchmark'])}</summary>"
                     f"<div>{''.join(items)}</div></details>")
    return "\n".join(parts)


def html(board: pl.DataFrame | None, triples: pl.DataFrame, per_case: pl.DataFrame,
         slug_of: dict[Key, str]) -> str:
    """The section's body: the table, how to read it, the entries behind its numbers."""
    if board is None or board.height == 0:
        return ('<p class="empty">no published run in this run (backend replay): no '
                "leaderboard; the local models follow</p>")
    return (table(board) + f'\n<p class="empty">{escape(READING)}</p>\n'
            "<details><summary>what each number pools (cells and their audit entries)"
            f"</summary>{entries(board, triples, per_case, slug_of)}</details>")


def markdown(board: pl.DataFrame | None) -> list[str]:
    """summary.md's leaderboard section (its heading included)."""
    out = [f"## {TITLE}", ""]
    if board is None or board.height == 0:
        return [*out, "No published run in this run (backend replay): no leaderboard.", ""]
    columns = _columns(golds(board))
    out += [line(["model", "benchmark", *(head for _, head in columns)]),
            line(["---"] * (2 + len(columns)))]
    for row in board.iter_rows(named=True):
        texts = []
        for metric, _ in columns:
            text, small, _ = _number(row, metric)
            if text == "unknown":
                texts.append("unknown (0 decided)")
            elif small == ["no such gold"]:
                texts.append("–")
            elif small and "%" in text:
                texts.append(f"{text} ({small[0]}) " + " ".join(small[1:]))
            elif small:
                texts.append(f"{text} ({', '.join(small)})")
            else:
                texts.append(text)
        out.append(line([row["model"], row["benchmark"], *texts]))
    return [*out, "", READING, ""]

