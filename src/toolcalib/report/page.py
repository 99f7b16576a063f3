"""HTML of the report: tables, audit listings and the self-contained page around them."""

from __future__ import annotations

import re
from html import escape
from typing import Any

import polars as pl

from toolcalib.metrics.markdown import FOOTER, LABELS, denominator, undecided
from toolcalib.metrics.rows import (
    ACC_WITHOUT_GOLD,
    CELL_KEYS,
    COUNTS,
    GOLD_WITHOUT_ACC,
    KEYS,
    RATES,
    STRUCTURAL,
    TURN_COUNTS,
)
from toolcalib.report.audit import Key, audit_id, audited, cell_id
from toolcalib.report.figures import Plot
from toolcalib.report.selfcheck import Check

RATE_LABELS = {rate: LABELS[rate] for rate in RATES}
BOUND_LABELS = {bound: LABELS[bound] for bound in (ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC)}
COUNT_LABELS = {count: LABELS[count] for count in COUNTS if count not in BOUND_LABELS}
STRUCTURAL_LABELS = {STRUCTURAL: LABELS[STRUCTURAL]}
TURN_LABELS = {count: LABELS[count] for count in TURN_COUNTS if count in LABELS}
"""Counts of turns, not cases (`ambiguous_turns`): shown as numbers, no case list behind."""
"""The triples' numbers the page shows, by kind, headed by their labels (`rows.TRIPLES`)."""

CSS = """\
body{font:14px/1.4 system-ui,sans-serif;margin:.5em auto;max-width:1400px;padding:0 .8em;color:#222}
h1{font-size:1.3em;margin:.2em 0}
h2{font-size:1.15em;border-bottom:1px solid #ccc;padding-bottom:.2em;
margin:1.2em 0 .4em}
#headline h2{margin-top:.4em}
nav{font-size:12px}nav a{margin-right:.8em}
table{border-collapse:collapse;font-size:11px}
table.triples{width:100%}
th,td{border:1px solid #ddd;padding:2px 3px;vertical-align:top}
th{background:#f3f3f3;position:sticky;top:0}
table.triples th,table.board th{cursor:pointer}
td.key{word-break:break-word;max-width:11em}td.gold{white-space:nowrap}
.filters{margin:.3em 0;font-size:12px}.filters select{margin-right:1em;font-size:12px}
td.num{text-align:right;white-space:nowrap}
td.num small{display:block}
td.long{max-width:32em;word-break:break-all;font-size:10px}
td small{color:#666;font-size:9.5px}
a{color:#1f5fa8;text-decoration:none}a:hover{text-decoration:underline}
:target{outline:2px solid #d62728;background:#fff4f4}
.wide{overflow-x:auto}
.grid{display:flex;flex-wrap:wrap;gap:1em 2em;align-items:flex-start}
.grid figure{max-width:640px;margin:.2em 0}
#headline .grid{gap:.3em 1em}#headline figure{max-width:none}
#headline figcaption{font-size:11px}
li.fails{color:#a01c1c}li.holds{color:#1d6b2c}
figure{margin:1em 0}figcaption{color:#555;max-width:70em}
svg.fig{max-width:100%;height:auto;display:block}
svg.fig *{stroke-linejoin:round;stroke-linecap:butt}
details.audit{margin:.2em 0}details.audit>div{margin-left:1.5em}
p.ids{font:11px/1.5 ui-monospace,monospace;margin:.2em 0 .5em 1.5em;word-break:break-all}
p.empty,p.same{margin:.1em 0;color:#777}
pre.note{white-space:pre-wrap;color:#555}
"""

SCRIPT = """\
function reveal(){var t=document.getElementById(decodeURIComponent(location.hash.slice(1)));
for(var e=t;e;e=e.parentElement){if(e.tagName==='DETAILS'){e.open=true;}}
if(t){t.scrollIntoView();}}
addEventListener('hashchange',reveal);addEventListener('DOMContentLoaded',reveal);
function filt(){var t=document.querySelector('table.triples'),
s=t.parentElement.previousElementSibling;
var v={};s.querySelectorAll('select').forEach(function(e){v[e.name]=e.value;});
t.querySelectorAll('tbody tr').forEach(function(r){var ok=true;
for(var k in v){if(v[k]&&r.dataset[k]!==v[k]){ok=false;}}r.style.display=ok?'':'none';});}
function sortBy(i){sortRows(document.querySelector('table.triples'),i);}
function sortCol(h){sortRows(h.closest('table'),h.cellIndex);}
function sortRows(t,i){var b=t.tBodies[0];
var d=t.dataset.col==String(i)&&t.dataset.dir!=='-'?'-':'+';t.dataset.col=i;t.dataset.dir=d;
var rows=Array.prototype.slice.call(b.rows);rows.sort(function(x,y){
var a=x.cells[i].dataset.v||x.cells[i].textContent,c=y.cells[i].dataset.v||y.cells[i].textContent;
var p=parseFloat(a),q=parseFloat(c),r=p===p&&q===q?p-q:(a<c?-1:a>c?1:0);
return d==='+'?r:-r;});
rows.forEach(function(r){b.appendChild(r);});}
"""
"""Opens the <details> around a linked audit entry; filters and sorts the triples table, and
sorts any table whose heading calls `sortCol` (the leaderboard) (inline; nothing is fetched)."""


def _link(target: str, text: str) -> str:
    return f'<a href="#{target}">{escape(text)}</a>'


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def _rate_cell(row: dict[str, Any], rate: str, slug: str) -> str:
    unknown = undecided(row, rate)
    note = f"<small>{unknown} unknown</small>" if unknown else ""
    if row[rate] is None and unknown:  # every scored case undecided
        return (f'<td class="num" data-v="-1" id="{cell_id(slug, rate)}">'
                f"{_link(audit_id(slug, rate), '–')}{note}</td>")
    if row[rate] is None and row["n"] and not denominator(row, rate):  # not defined here
        return (f'<td class="num" data-v="-1" id="{cell_id(slug, rate)}">'
                f"{_link(audit_id(slug, rate), '–')}<small>none</small></td>")
    if row[rate] is None:  # n = 0: no rate, no interval
        return (f'<td class="num" data-v="-1" id="{cell_id(slug, rate)}">–<small>'
                f"{_link(audit_id(slug, 'n'), 'n = ' + str(row['n']))}</small></td>")
    own = audit_id(slug, rate)
    interval = f"[{_percent(row[f'{rate}_lo'])}, {_percent(row[f'{rate}_hi'])}]"
    return (
        f'<td class="num" data-v="{row[rate]}" id="{cell_id(slug, rate)}">'
        f'{_link(own, _percent(row[rate]) + "%")}'
        f"<small>{row[f'{rate}_k']}/{denominator(row, rate)}</small><small>{interval}</small>"
        f"{note}</td>"
    )


def _count_cell(row: dict[str, Any], metric: str, slug: str) -> str:
    return (
        f'<td class="num" id="{cell_id(slug, metric)}">'
        f"{_link(audit_id(slug, metric), str(row[metric]))}</td>"
    )


UNKNOWN_COUNTS = ("n_gar_unknown", "unknown_turns")
"""Counts of what a record did not keep: a column only where some cell has one (the GAR cell
notes its own undecided cases)."""


def _any_unknown(triples: pl.DataFrame, column: str) -> bool:
    return column not in UNKNOWN_COUNTS or bool(triples[column].fill_null(0).sum())


def triples_table(triples: pl.DataFrame, slug_of: dict[Key, str]) -> str:
    """Every triple with counts and 95% intervals; each number links to its audit entry."""
    shown = audited(triples.columns)
    counts = [m for m in COUNT_LABELS if m in shown and _any_unknown(triples, m)]
    bounds = [m for m in BOUND_LABELS if m in shown]
    rates = [*RATE_LABELS, *(m for m in STRUCTURAL_LABELS if m in shown)]
    turns = [m for m in TURN_LABELS if m in triples.columns and _any_unknown(triples, m)]
    header = [*KEYS, *(LABELS[m] for m in ["gold_action", *counts, *turns, *rates, *bounds])]
    head = "<thead><tr>" + "".join(
        f'<th onclick="sortBy({i})" title="sort">{escape(h)}</th>' for i, h in enumerate(header)
    ) + "</tr></thead><tbody>"
    selects = []
    for key in ("model", "benchmark", "category", "variant"):
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>'
                          for v in sorted(triples[key].unique().to_list()))
        selects.append(f'<label>{key} <select name="{key}" onchange="filt()">'
                       f'<option value="">all</option>{options}</select></label>')
    lines = [f'<div class="filters">{"".join(selects)} (click a heading to sort)</div>',
             '<div class="wide"><table class="triples">', head]
    for row in triples.iter_rows(named=True):
        slug = slug_of[tuple(row[k] for k in CELL_KEYS)]
        data = "".join(f' data-{k}="{escape(str(row[k]))}"'
                       for k in ("model", "benchmark", "category", "variant"))
        cells = [f'<td class="key">{escape(str(row[k])).replace("_", "_<wbr>")}</td>'
                 for k in KEYS]
        cells.append(f'<td class="gold">{escape(str(row["gold_action"]))}</td>')
        cells += [_count_cell(row, m, slug) for m in counts]
        cells += [f'<td class="num">{row[m]}</td>' for m in turns]
        cells += [_rate_cell(row, rate, slug) for rate in rates]
        cells += [_count_cell(row, m, slug) for m in bounds]
        lines.append(f"<tr{data}>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table></div>")
    lines.append(f'<pre class="note">{escape(FOOTER)}</pre>')
    return "\n".join(lines)


def audit_listing(
    triples: pl.DataFrame, lists: dict[Key, dict[str, list[str]]], slug_of: dict[Key, str]
) -> str:
    """Per triple, a collapsed list of the case ids behind each of its numbers (a list equal
    to one listed earlier on the page names that one instead of repeating it)."""
    parts = []
    first: dict[tuple[str, ...], tuple[Key, str]] = {}  # a list of ids -> where it is shown
    for row in triples.iter_rows(named=True):
        key = tuple(row[k] for k in CELL_KEYS)
        slug = slug_of[key]
        entries = []
        for metric, (meaning, _) in audited(triples.columns).items():
            ids = lists[key][metric]
            shown = metric if _any_unknown(triples, metric) else "gar"  # no column: GAR's note
            head = (f"{escape(LABELS[metric])}: {len(ids)} — {escape(meaning)} "
                    f"({_link(cell_id(slug, shown), 'table')})")
            if not ids:
                entries.append(f'<p class="empty" id="{audit_id(slug, metric)}">{head}</p>')
                continue
            where, same = first.setdefault(tuple(ids), (key, metric))
            if (where, same) != (key, metric):  # written once: the page stays small
                text = LABELS[same] if where == key else f"{LABELS[same]} of {' · '.join(where)}"
                entries.append(f'<p class="same" id="{audit_id(slug, metric)}">{head}: the same '
                               f"cases as {_link(audit_id(slug_of[where], same), text)}</p>")
                continue
            scored = lists[key]["n"]
            if metric != "n" and 2 * len(ids) > len(scored) and set(ids) <= set(scored):
                rest = set(ids)
                missing = [case for case in scored if case not in rest]
                entries.append(
                    f'<details id="{audit_id(slug, metric)}"><summary>{head}</summary>'
                    f'<p class="ids">every case of {_link(audit_id(slug, "n"), "n")} but '
                    f"{len(missing)}: {escape(' '.join(missing))}</p></details>")
                continue
            entries.append(
                f'<details id="{audit_id(slug, metric)}"><summary>{head}</summary>'
                f'<p class="ids">{escape(" ".join(ids))}</p></details>'
            )
        title = " · ".join(escape(part) for part in key)
        parts.append(
            f'<details class="audit" id="audit-{slug}"><summary>{title} '
            f"(n={row['n']}, excluded={row['n_excluded']})</summary>"
            f"<div>{''.join(entries)}</div></details>"
        )
    return "\n".join(parts)


def self_check(checks: list[Check], kinds: dict[str, str]) -> str:
    """Each reference policy's invariants and whether they hold on this run's triples."""
    if not kinds:
        return note("no reference policy in this run")
    items = []
    for c in checks:
        if c.holds:
            verdict = f"holds ({c.cells} cells)"
        else:
            verdict = (f"FAILS in {len(c.failed)} of {c.cells} cells: "
                       + "; ".join(c.failed))
        items.append(f'<li class="{"holds" if c.holds else "fails"}"><b>{escape(c.model)}'
                     f"</b>: {escape(c.invariant)}: {escape(verdict)}</li>")
    items += [f"<li><b>{escape(m)}</b>: no invariant known for policy {escape(k)}</li>"
              for m, k in sorted(kinds.items()) if not any(c.model == m for c in checks)]
    return ("<p>Deterministic policies that calibrate the diagnostic itself; their rows are in "
            "the triples table above.</p>\n<ul>" + "".join(items) + "</ul>")


def _cell(value: Any) -> str:
    text = escape(_value(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td class="num">{text}</td>'
    return f'<td class="long">{text}</td>' if len(text) > 60 else f"<td>{text}</td>"


def _value(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def frame_table(frame: pl.DataFrame) -> str:
    """Any table as HTML, its rows in the frame's order."""
    head = "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in frame.columns) + "</tr>"
    rows = ["<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in frame.iter_rows()]
    return "\n".join(['<div class="wide"><table>', head, *rows, "</table></div>"])


def note(text: str) -> str:
    """A short grey paragraph: what a section does not show, and why."""
    return f'<p class="empty">{escape(text)}</p>'


def _width(plot: Plot) -> str:
    """` style="width:Npx"`: the figure as wide as its SVG (its caption wraps under it)."""
    points = re.search(r'\bwidth="([\d.]+)pt"', plot.svg)
    return f' style="width:{round(float(points.group(1)) * 4 / 3)}px"' if points else ""


def figures(plots: list[Plot], grid: bool = False, fit: bool = False) -> str:
    """Each plot as a <figure> with its caption (`grid`: side by side where they fit; `fit`:
    each figure exactly as wide as its SVG)."""
    html = "\n".join(
        f'<figure id="{plot.id}"{_width(plot) if fit else ""}>{plot.svg}<figcaption><b>'
        f"{escape(plot.title)}.</b> {escape(plot.caption)}</figcaption></figure>"
        for plot in plots
    )
    return f'<div class="grid">{html}</div>' if grid else html


def document(title: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole page: `sections` are (id, heading, HTML body); CSS and script inline."""
    nav = " ".join(_link(sid, heading) for sid, heading, _ in sections)
    body = "\n".join(
        f'<section id="{sid}"><h2>{escape(heading)}</h2>\n{html}\n</section>'
        for sid, heading, html in sections
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(title)}</title>\n<style>\n{CSS}</style>\n"
        f"<script>\n{SCRIPT}</script>\n</head>\n<body>\n<h1>{escape(title)}</h1>\n"
        f"<nav>{nav}</nav>\n{body}\n</body>\n</html>\n"
    )
