"""Assemble the report: one self-contained `index.html` and the markdown `summary.md`."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from toolcalib.jsonio import atomic_write_bytes
from toolcalib.metrics.markdown import triples_markdown
from toolcalib.metrics.rows import KEYS
from toolcalib.report import figures, page
from toolcalib.report.audit import case_lists, slugs

SCORED = pl.col("n") > 0
"""A triple with a scored case: one with n = 0 has no rate, nothing to plot."""
TITLE = "toolcalib: action-class calibration report"
FILES = ("index.html", "summary.md")


def render_html(
    triples: pl.DataFrame,
    confusion: pl.DataFrame,
    per_case: pl.DataFrame,
    *,
    shift: pl.DataFrame | None = None,
    validation: pl.DataFrame | None = None,
) -> str:
    """The page's text; equal inputs give equal text (rows are taken in sorted order)."""
    triples = triples.sort(KEYS)
    slug_of = slugs([tuple(row) for row in triples.select(KEYS).iter_rows()])
    lists = case_lists(triples, per_case)
    scatter = figures.gar_acc(triples)
    sections = [
        ("triples", "Triples (GAR, TER, Acc)", page.triples_table(triples, slug_of)),
        ("heatmaps", "Gold x emitted at the gold turn",
         page.figures(figures.heatmaps(confusion), grid=True)
         + _unplotted(triples, ["model", "variant"], SCORED, "no scored case, no heatmap panel")),
        ("gar-vs-acc", "GAR vs Acc", page.figures([scatter] if scatter else [])
         + _unplotted(triples, KEYS, SCORED, "n = 0, no point")),
    ]
    if shift is not None:
        shift = shift.sort("model", "variant", "benchmark", "category", "metric")
        body = page.figures(figures.shifts(shift))
        body += _unplotted(shift, ["model", "variant"], pl.col("delta").is_not_null(),
                           "no paired case, no plot")
        body += ("\n<details><summary>shift table</summary>"
                 f"{page.frame_table(shift)}</details>")
        sections.append(("shifts", "Variant shifts", body))
    if validation is not None:
        sections.append(("validation", "Classifier validation", page.frame_table(validation)))
    sections.append(("audit", "Audit: the cases behind every number",
                     page.audit_listing(triples, lists, slug_of)))
    return page.document(TITLE, sections)


def _unplotted(table: pl.DataFrame, keys: list[str], drawn: pl.Expr, what: str) -> str:
    """A note naming the groups of `keys` with no row that is `drawn` (nothing to plot for
    them), or "" when there is none."""
    empty = (table.group_by(keys).agg(drawn.any().alias("drawn")).filter(~pl.col("drawn"))
             .sort(keys).select(keys).rows())
    if not empty:
        return ""
    return "\n" + page.note(f"{what}: " + "; ".join(" · ".join(group) for group in empty))


def build_report(
    triples: pl.DataFrame,
    confusion: pl.DataFrame,
    per_case: pl.DataFrame,
    *,
    shift: pl.DataFrame | None = None,
    validation: pl.DataFrame | None = None,
    out_dir: str | Path,
) -> Path:
    """Write `out_dir/index.html` (figures inline, nothing external) and `summary.md`.

    `triples`, `confusion`, `per_case` are the metrics stage's tables; `shift` has columns
    model, variant, benchmark, category, metric, delta, p_value; `validation` is shown as is.
    Returns the path of index.html.
    """
    out = Path(out_dir)
    text = render_html(triples, confusion, per_case, shift=shift, validation=validation)
    atomic_write_bytes(out / "index.html", text.encode("utf-8"))
    atomic_write_bytes(out / "summary.md", triples_markdown(triples.sort(KEYS)).encode("utf-8"))
    return out / "index.html"
