"""The report's "Paired runs" section: the config's model-vs-model pairs (`metrics.pairs`), per
pair, variant, category, gold class and metric the shift with McNemar's p and the flips by
cause; on the page, the case ids behind every count in an audit-style listing."""

from __future__ import annotations

from html import escape
from typing import Any

import polars as pl

from toolcalib.metrics.markdown import LABELS, line
from toolcalib.metrics.pairs import CAUSES, CELL, FLIP_CAUSES
from toolcalib.report.audit import slugs

TITLE = "Paired runs (model vs model, on the same cases)"
INTRO = ("Each pair's other run against its base run on the cases both have (exact McNemar on "
         "the discordant pairs; delta = other - base, in points). A flip's cause: the classes "
         "emitted or the class at the gold turn changed (action), or only the verdict did "
         "(execution); an infrastructure outcome on one side only (error appeared on other, or "
         "vanished from it) pairs no metric; a case whose GAR is undecided on either side (text "
         "not recorded) is no GAR pair (undecided).")
CELL_KEYS = ["pair", "variant", *CELL]
CAUSE_LABELS = {"error_appeared": "error appeared", "error_vanished": "error vanished",
                "action_changed": "action changed", "execution_changed": "execution changed"}


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _delta(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _slugs(pairs: pl.DataFrame) -> dict[tuple[str, ...], str]:
    keys = pairs.select(CELL_KEYS).unique(maintain_order=True).rows()
    return {key: f"pair-{slug}" for key, slug in slugs([tuple(map(str, k)) for k in keys]).items()}


def _link(target: str, text: str) -> str:
    return f'<a href="#{escape(target)}">{escape(text)}</a>'


def _annotated(row: dict[str, Any]) -> str:
    """`c12 (GAR+, Acc-)`: a case and the metrics it flipped."""
    marks = [f"{LABELS[m]}+" for m in row["metrics_gained"].split("|") if m]
    marks += [f"{LABELS[m]}-" for m in row["metrics_lost"].split("|") if m]
    return f"{row['case_id']} ({', '.join(marks)})" if marks else row["case_id"]


def html(pairs: pl.DataFrame, flips: pl.DataFrame) -> str:
    """The section's body: the table (each count links to its cases) and the listing."""
    slug_of = _slugs(pairs)
    head = ["pair · variant", "benchmark · category", "gold", "metric", "n pairs", "base",
            "other", "delta", "gained", "lost", "McNemar p",
            *(CAUSE_LABELS[c] for c in FLIP_CAUSES), *(CAUSE_LABELS[c] for c in CAUSES[:2]),
            "undecided", "unpaired base / other"]
    rows = ["<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in pairs.iter_rows(named=True):
        slug = slug_of[tuple(str(r[k]) for k in CELL_KEYS)]
        metric = r["metric"]
        cells = [f"{r['pair']} · {r['variant']}", f"{r['benchmark']} · {r['category']}",
                 str(r["gold_action"]), LABELS[metric]]
        row = [f"<td>{escape(c)}</td>" for c in cells]
        row += [f'<td class="num">{v}</td>' for v in (
            r["n_pairs"], _percent(r["rate_base"]), _percent(r["rate_other"]),
            _delta(r["delta"]))]
        row += [f'<td class="num">{_link(f"{slug}-{metric}", str(r[k]))}</td>'
                for k in ("b01", "b10")]
        row.append(f'<td class="num">{_p(r["p_value"])}</td>')
        row += [f'<td class="num">{_link(f"{slug}-{c}", str(r[f"flips_{c}"]))}</td>'
                for c in FLIP_CAUSES]
        row += [f'<td class="num">{_link(f"{slug}-{c}", str(r[c]))}</td>' for c in CAUSES[:2]]
        row.append(f'<td class="num">{r["n_undecided"]}</td>')
        row.append(f'<td class="num">{r["n_unpaired_base"]} / {r["n_unpaired_other"]}</td>')
        rows.append("<tr>" + "".join(row) + "</tr>")
    table = '<div class="wide"><table>' + "\n".join(rows) + "</table></div>"
    return (f"<p>{escape(INTRO)}</p>\n{_names(pairs)}\n{table}\n"
            f"{_listing(pairs, flips, slug_of)}")


def _names(pairs: pl.DataFrame) -> str:
    items = "".join(f"<li><b>{escape(name)}</b>: {escape(other)} against {escape(base)}</li>"
                    for name, base, other in pairs.select("pair", "base", "other")
                    .unique(maintain_order=True).rows())
    return f"<ul>{items}</ul>"


def _entry(anchor: str, head: str, ids: list[str]) -> str:
    if not ids:
        return f'<p class="empty" id="{escape(anchor)}">{escape(head)}: 0</p>'
    return (f'<details id="{escape(anchor)}"><summary>{escape(head)}: {len(ids)}</summary>'
            f'<p class="ids">{escape(" ".join(ids))}</p></details>')


def _listing(pairs: pl.DataFrame, flips: pl.DataFrame,
             slug_of: dict[tuple[str, ...], str]) -> str:
    """Per (pair, variant, cell): each metric's flipped cases each way, then the changed
    cases by cause (each with the metrics it flipped)."""
    by_cell: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in flips.iter_rows(named=True):
        by_cell.setdefault(tuple(str(row[k]) for k in CELL_KEYS), []).append(row)
    parts = []
    for key, slug in slug_of.items():
        rows = pairs.filter(*(pl.col(k).cast(pl.String) == v for k, v in zip(CELL_KEYS, key,
                                                                              strict=True)))
        entries = []
        for r in rows.iter_rows(named=True):
            gained = [c for c in (r["flips_gained"] or "").split("|") if c]
            lost = [c for c in (r["flips_lost"] or "").split("|") if c]
            label = LABELS[r["metric"]]
            entries.append(f'<div id="{escape(slug)}-{r["metric"]}">'
                           + _entry(f"{slug}-{r['metric']}-gained", f"{label} gained", gained)
                           + _entry(f"{slug}-{r['metric']}-lost", f"{label} lost", lost)
                           + "</div>")
        changed = by_cell.get(key, [])
        for cause in CAUSES:
            ids = [_annotated(row) for row in changed if row["cause"] == cause]
            entries.append(_entry(f"{slug}-{cause}", CAUSE_LABELS[cause], ids))
        parts.append(f'<details class="audit" id="{escape(slug)}"><summary>'
                     f"{escape(' · '.join(key))} ({len(changed)} changed)</summary>"
                     f"<div>{''.join(entries)}</div></details>")
    return ("<details><summary>the cases behind these numbers</summary>"
            + "\n".join(parts) + "</details>")


def markdown(pairs: pl.DataFrame | None) -> list[str]:
    """The section in summary.md (no case ids: they are in pairs.csv and pair_flips.csv)."""
    if pairs is None or pairs.height == 0:
        return []
    out = [f"## {TITLE}", "", INTRO, ""]
    head = ["pair", "variant", "category", "gold", "metric", "n", "base", "other", "delta",
            "McNemar p", "flips: action / execution", "errors: appeared / vanished",
            "undecided"]
    for name, base, other in pairs.select("pair", "base", "other").unique(
            maintain_order=True).rows():
        out += [f"- **{name}**: {other} against {base}"]
    out += ["", line(head), line(["---"] * len(head))]
    for r in pairs.iter_rows(named=True):
        out.append(line([
            r["pair"], r["variant"], r["category"], r["gold_action"], LABELS[r["metric"]],
            r["n_pairs"], _percent(r["rate_base"]), _percent(r["rate_other"]),
            _delta(r["delta"]), _p(r["p_value"]),
            f"{r['flips_action_changed']} / {r['flips_execution_changed']}",
            f"{r['error_appeared']} / {r['error_vanished']}", r["n_undecided"]]))
    return [*out, ""]

