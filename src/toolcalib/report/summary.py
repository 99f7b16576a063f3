"""summary.md: the report's markdown twin, in the page's order (the audit listing is the
page's only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from toolcalib.metrics.markdown import LABELS, line, rate_text, triples_markdown
from toolcalib.metrics.published import absent_lines, disagreements, file_lines
from toolcalib.metrics.rows import ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC, RATES
from toolcalib.report.selfcheck import Check

HEADLINE = ["gold_action", "n", "gar", "ter", "acc", ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC,
            "n_step_cap", "n_excluded"]
"""The triples' columns of the headline table after model and category, in order."""
INTERVALS = ("gar", "acc")
"""The headline's rates headed with their 95% interval (every rate shows one)."""


def _headline(triples: pl.DataFrame, real: list[str], variant: str | None) -> list[str]:
    rows = triples.filter(pl.col("model").is_in(real) & (pl.col("variant") == variant))
    if rows.height == 0:
        return ["No real model in this run (only reference policies): see the self-check."]
    header = ["model", "category", *(f"{LABELS[name]} [95% CI]" if name in INTERVALS else
                                     LABELS[name] for name in HEADLINE)]
    out = [line(header), line(["---"] * len(header))]
    rank = {model: i for i, model in enumerate(real)}
    ordered = rows.with_columns(pl.col("model").replace_strict(rank).alias("_rank")).sort(
        "_rank", "benchmark", "gold_action", "category")
    for r in ordered.iter_rows(named=True):
        out.append(line([r["model"], r["category"], *(rate_text(r, name) if name in RATES else
                                                      r[name] for name in HEADLINE)]))
    return out


def _shifts(shift: pl.DataFrame | None, flat: pl.DataFrame | None) -> list[str]:
    if shift is None or flat is None or shift.height == 0:
        return ["No variant ran for a real model."]
    unpaired = sorted(set(shift.select("model", "variant").rows())
                      - set(flat.select("model", "variant").rows()))
    out = [f"- {model} · {variant}: no paired case, no comparison" for model, variant in unpaired]
    for model, variant, still, rows, categories in flat.iter_rows():
        if still:
            out.append(f"- {model} · {variant}: no change (every delta 0 over {categories} "
                       f"categories x {rows // categories} metrics)")
            continue
        moved = shift.filter((pl.col("model") == model) & (pl.col("variant") == variant)
                             & (pl.col("delta").fill_null(0) != 0))
        out.append(f"- {model} · {variant}: {moved.height} (category, metric) pair(s) moved:")
        for r in moved.iter_rows(named=True):
            p = "–" if r.get("p_value") is None else f"{r['p_value']:.3g}"
            out.append(f"  - {r['category']} {r['metric']}: {r['delta']:+.3f} (McNemar p = {p})")
    return out


def _self_check(checks: list[Check], kinds: dict[str, str]) -> list[str]:
    if not kinds:
        return ["No reference policy in this run."]
    out = []
    for c in checks:
        verdict = (f"holds ({c.cells} cells)" if c.holds
                   else f"FAILS in {len(c.failed)} of {c.cells} cells: " + "; ".join(c.failed))
        out.append(f"- {c.model}: {c.invariant}: {verdict}")
    out += [f"- {m}: no invariant known for policy `{k}`" for m, k in sorted(kinds.items())
            if not any(c.model == m for c in checks)]
    return out


def _published(published: pl.DataFrame | None, recorded: pl.DataFrame | None) -> list[str]:
    if published is None or published.height == 0:
        return []
    out = ["## Published runs: recorded vs recomputed reward", "",
           *(f"- {text}" for text in [*file_lines(published, recorded),
                                      *absent_lines(recorded)]), ""]
    listed = disagreements(published)
    if listed.height:
        out += ["Disagreements and records not scored:", "", *_frame(listed), ""]
    return out


def _frame(frame: pl.DataFrame) -> list[str]:
    def value(v: Any) -> str:
        return "–" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)

    out = [line(frame.columns), line(["---"] * frame.width)]
    return out + [line([value(v) for v in row]) for row in frame.iter_rows()]


def markdown(triples: pl.DataFrame, *, real: list[str], variant: str | None,
             shift: pl.DataFrame | None, flat: pl.DataFrame | None, checks: list[Check],
             kinds: dict[str, str], validation: list[pl.DataFrame], title: str,
             published: pl.DataFrame | None = None, leaderboard: Sequence[str] = (),
             paired: Sequence[str] = (), recorded: pl.DataFrame | None = None,
             failed: Sequence[str] = ()) -> str:
    """`failed`: the failed imports' section lines, first; `leaderboard`: the leaderboard
    section's lines (`report.leaderboard.markdown`), next; `paired`: the paired runs' lines
    (`report.paired_runs.markdown`), after the shifts."""
    parts = [f"# {title}", "", *failed, *leaderboard,
             f"## Calibration at a glance ({variant}, real models)", "",
             *_headline(triples, real, variant), "", *_published(published, recorded),
             "## Variant shifts (real models, paired on the same cases)", "",
             *_shifts(shift, flat), "", *paired, "## Triples (GAR, TER, Acc), every model", "",
             triples_markdown(triples).rstrip("\n"), "",
             "## Self-check: the reference policies", "", *_self_check(checks, kinds), ""]
    if validation:
        parts += ["## Classifier validation", ""]
        for frame in validation:
            parts += [*_frame(frame), ""]
    return "\n".join(parts)
