"""Assemble the report: one self-contained `index.html` and its markdown twin `summary.md`.

Both follow one order: the published-run imports that failed (where any did: model, benchmark,
category and the one-line reason; those models have no cell of the category, every other model's
cells are built), the published runs' calibration leaderboard (where given), the headline
(each real model's calibration profile, published runs first, and the GAR vs Acc plane), the
published runs' recorded vs recomputed rewards, the real models' variant shifts, the full
triples table, the gold x emitted heatmaps, the reference policies' self-check, the classifier
validation and (page only) the audit listing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from toolcalib.jsonio import atomic_write_bytes
from toolcalib.metrics.published import absent_lines, disagreements, file_lines
from toolcalib.metrics.rows import CELL_KEYS, KEYS
from toolcalib.report import figures, page, paired_runs, summary
from toolcalib.report import leaderboard as board
from toolcalib.report.audit import case_lists, slugs
from toolcalib.report.selfcheck import checks, policy_kinds

SCORED = pl.col("n") > 0
"""A triple with a scored case: one with n = 0 has no rate, nothing to plot."""
TITLE = "toolcalib: action-class calibration report"
FILES = ("index.html", "summary.md")
HEADLINE_VARIANT = "baseline"


@dataclass(frozen=True)
class ReportTables:
    """What the report is built from. `triples`, `confusion`, `per_case`: the metrics stage's
    tables; `shift`: model, variant, benchmark, category, metric, delta, p_value; `validation`
    (per class) and `validation_summary` (per profile and source: n, accuracy, macro-F1,
    kappa): the classifier validation stage's tables, shown as they are; `policies`: the
    reference policies' model names and kinds (None: models named `policy-<kind>`);
    `published`: the published runs' table (`metrics.published`); `leaderboard`: the published
    runs' calibration leaderboard (`metrics.leaderboard`), the first section where given."""

    triples: pl.DataFrame
    confusion: pl.DataFrame
    per_case: pl.DataFrame
    shift: pl.DataFrame | None = None
    validation: pl.DataFrame | None = None
    policies: dict[str, str] | None = None
    published: pl.DataFrame | None = None
    validation_summary: pl.DataFrame | None = None
    leaderboard: pl.DataFrame | None = None
    pairs: pl.DataFrame | None = None
    pair_flips: pl.DataFrame | None = None
    recorded: pl.DataFrame | None = None
    """The published runs' own headlines per category (`metrics.published.RECORDED`), beside
    each file's agreement line."""
    import_failures: pl.DataFrame | None = None
    """The published-run imports that failed (`metrics.published.failed_imports`: model,
    benchmark, category, reason), the page's first section where given."""

    def validation_tables(self) -> list[pl.DataFrame]:
        """The classifier validation tables given, in the order shown: summary, per class."""
        return [f for f in (self.validation_summary, self.validation) if f is not None]


def headline_variant(triples: pl.DataFrame) -> str | None:
    """`baseline` when it has a row, else the first variant in sorted order."""
    variants = sorted(triples["variant"].unique().to_list())
    if not variants:
        return None
    return HEADLINE_VARIANT if HEADLINE_VARIANT in variants else variants[0]


def split_models(triples: pl.DataFrame, policies: dict[str, str] | None,
                 published: pl.DataFrame | None = None) -> tuple[list[str], dict[str, str]]:
    """(the real models: published runs first, then the others, each by name; policy model
    -> kind, by name)."""
    models = sorted(triples["model"].unique().to_list())
    kinds = policy_kinds(models, policies)
    replayed = set() if published is None else set(published["model"].to_list())
    real = [m for m in models if m not in kinds]
    return sorted(real, key=lambda m: (m not in replayed, m)), kinds


def unchanged(shift: pl.DataFrame) -> pl.DataFrame:
    """Per (model, variant) of `shift` with a paired case: whether every delta is 0."""
    return (shift.filter(pl.col("delta").is_not_null()).group_by("model", "variant")
            .agg((pl.col("delta") == 0).all().alias("unchanged"),
                 pl.len().alias("rows"), pl.col("category").n_unique().alias("categories"))
            .sort("model", "variant"))


def render_html(tables: ReportTables) -> str:
    """The page's text; equal inputs give equal text (rows are taken in sorted order)."""
    confusion, per_case, policies = tables.confusion, tables.per_case, tables.policies
    shift, published = tables.shift, tables.published
    triples = tables.triples.sort(CELL_KEYS)
    slug_of = slugs([tuple(row) for row in triples.select(CELL_KEYS).iter_rows()])
    lists = case_lists(triples, per_case)
    real, kinds = split_models(triples, policies, published)
    is_real = pl.col("model").is_in(real)
    variant = headline_variant(triples)

    # No variant: the triples have no row, so there is no real model to profile either.
    profiles = ([figures.profile(triples, m, variant, i) for i, m in enumerate(real)]
                if variant is not None else [])
    plots = [p for p in profiles if p is not None]
    plane = figures.gar_acc(triples.filter(is_real & (pl.col("variant") == variant)),
                            compact=True)
    headline = page.figures([*plots, *([plane] if plane else [])], grid=True, fit=True)
    if not real:
        headline += page.note("no real model in this run (only reference policies): see the "
                              "self-check")
    shown = triples.filter(is_real & (pl.col("variant") == variant))
    headline += _unplotted(shown, ["model", "variant"], SCORED, "no scored case, no profile")
    headline += _unplotted(shown, KEYS, SCORED, "n = 0, no point")
    sections = [("headline", f"Calibration at a glance ({variant})", headline)]
    if tables.leaderboard is not None:  # the page opens on the published runs' leaderboard
        sections.insert(0, ("leaderboard", board.TITLE,
                            board.html(tables.leaderboard, triples, per_case, slug_of)))
    if tables.import_failures is not None:  # first: what the page cannot show
        sections.insert(0, ("imports-failed", FAILED_TITLE,
                            _failed_imports_html(tables.import_failures)))
    if published is not None and published.height:
        listed = disagreements(published)
        body = "\n".join(page.note(text) for text in [*file_lines(published, tables.recorded),
                                                       *absent_lines(tables.recorded)])
        if listed.height:
            body += ("\n<details><summary>disagreements and records not scored "
                     f"({listed.height})</summary>{page.frame_table(listed)}</details>")
        sections.append(("published", "Published runs: recorded vs recomputed reward", body))

    if shift is not None:
        shift = shift.filter(is_real).sort("model", "variant", "benchmark", "category",
                                           "metric")
    if shift is not None and shift.height:
        flat = unchanged(shift)
        moved = shift.join(flat.filter(~pl.col("unchanged")).select("model", "variant"),
                           on=["model", "variant"])
        lines = [page.note(f"{m} · {v}: no change (every delta 0 over {c} categories x "
                           f"{r // c} metrics)")
                 for m, v, _, r, c in flat.filter("unchanged").iter_rows()]
        body = "\n".join(lines) + "\n" + page.figures(figures.shifts(moved)) if moved.height \
            else "\n".join(lines)
        body += _unplotted(shift, ["model", "variant"], pl.col("delta").is_not_null(),
                           "no paired case, no plot")
        body += ("\n<details><summary>shift table (real models)</summary>"
                 f"{page.frame_table(shift)}</details>")
        sections.append(("shifts", "Variant shifts (real models, paired on the same cases)",
                         body))
    elif shift is not None or triples["variant"].n_unique() > 1:
        sections.append(("shifts", "Variant shifts", page.note("no variant ran for a real model")))

    if tables.pairs is not None and tables.pairs.height and tables.pair_flips is not None:
        sections.append(("pairs", paired_runs.TITLE,
                         paired_runs.html(tables.pairs, tables.pair_flips)))
    sections.append(("triples", "Triples (GAR, TER, Acc), every model",
                     page.triples_table(triples, slug_of)))
    heat = confusion.filter(is_real)
    sections.append(("heatmaps", "Gold x emitted at the gold turn (real models)",
                     page.figures(figures.heatmaps(heat), grid=True)
                     + _unplotted(triples.filter(is_real), ["model", "variant"], SCORED,
                                  "no scored case, no heatmap panel")))
    sections.append(("self-check", "Self-check: the reference policies",
                     page.self_check(checks(triples, kinds), kinds)))
    if validation := tables.validation_tables():
        sections.append(("validation", "Classifier validation",
                         "\n".join(page.frame_table(frame) for frame in validation)))
    sections.append(("audit", "Audit: the cases behind every number",
                     page.audit_listing(triples, lists, slug_of)))
    return page.document(TITLE, sections)


def render_summary(tables: ReportTables) -> str:
    """summary.md: the page's sections in the page's order, as markdown."""
    shift = tables.shift
    triples = tables.triples.sort(CELL_KEYS)
    real, kinds = split_models(triples, tables.policies, tables.published)
    if shift is not None:
        shift = shift.filter(pl.col("model").is_in(real)).sort(
            "model", "variant", "benchmark", "category", "metric")
    return summary.markdown(
        triples, real=real, variant=headline_variant(triples), shift=shift,
        flat=unchanged(shift) if shift is not None else None,
        checks=checks(triples, kinds), kinds=kinds, validation=tables.validation_tables(),
        title=TITLE, published=tables.published, recorded=tables.recorded,
        paired=paired_runs.markdown(tables.pairs), failed=_failed_imports_markdown(
            tables.import_failures),
        leaderboard=board.markdown(tables.leaderboard) if tables.leaderboard is not None else [])


FAILED_TITLE = "Imports that failed"
FAILED_NOTE = ("the published files of these imports could not be read (the reason names the "
               "file, line and field): each has no cell here, every other model's cells are "
               "built; fix the file and rerun, and only its jobs run again")


def _failed_imports_html(failures: pl.DataFrame) -> str:
    return page.note(f"{failures.height} import(s) failed: {FAILED_NOTE}") \
        + page.frame_table(failures)


def _failed_imports_markdown(failures: pl.DataFrame | None) -> list[str]:
    if failures is None:
        return []
    return [f"## {FAILED_TITLE}", "", f"{failures.height} import(s) failed: {FAILED_NOTE}.", "",
            *(f"- {m} · {b} · {c}: {reason}" for m, b, c, reason in failures.iter_rows()), ""]


def _unplotted(table: pl.DataFrame, keys: list[str], drawn: pl.Expr, what: str) -> str:
    """A note naming the groups of `keys` with no row that is `drawn` (nothing to plot for
    them), or "" when there is none."""
    empty = (table.group_by(keys).agg(drawn.any().alias("drawn")).filter(~pl.col("drawn"))
             .sort(keys).select(keys).rows())
    if not empty:
        return ""
    return "\n" + page.note(f"{what}: " + "; ".join(" · ".join(group) for group in empty))


def build_report(tables: ReportTables, out_dir: str | Path) -> Path:
    """Write `out_dir/index.html` (figures inline, nothing external) and `summary.md`; returns
    the path of index.html."""
    out = Path(out_dir)
    atomic_write_bytes(out / "index.html", render_html(tables).encode("utf-8"))
    atomic_write_bytes(out / "summary.md", render_summary(tables).encode("utf-8"))
    return out / "index.html"
