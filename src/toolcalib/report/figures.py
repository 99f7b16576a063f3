"""The report's figures: calibration profiles, GAR vs Acc plane, heatmaps, variant shifts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
from matplotlib.lines import Line2D

from toolcalib.metrics.confusion import EMITTED
from toolcalib.metrics.rows import RATES
from toolcalib.records import GOLD_CLASSES
from toolcalib.report.svg import new_figure, style, to_svg

if TYPE_CHECKING:
    from matplotlib.collections import QuadMesh

MARKERS = "osD^v<>pP*hX8H"
SIGNIFICANT = 0.05
"""Shift bars with p_value below this are starred."""


@dataclass(frozen=True)
class Plot:
    """One figure of the page: its anchor id, heading, caption and inline SVG."""

    id: str
    title: str
    caption: str
    svg: str


def _ordered(values: list[str], order: tuple[str, ...] | list[str]) -> list[str]:
    """Distinct `values`: those in `order` first, in its order, then the rest sorted."""
    present = set(values)
    return [v for v in order if v in present] + sorted(present - set(order))


def _color(index: int) -> tuple[float, float, float, float]:
    from matplotlib import colormaps

    palette = colormaps["tab10" if index < 10 else "tab20"]
    return palette(index % palette.N)


def _label(row: dict[str, Any], benchmarks: int) -> str:
    return row["category"] if benchmarks == 1 else f"{row['benchmark']}/{row['category']}"


def heatmaps(confusion: pl.DataFrame) -> list[Plot]:
    """Per model, gold x emitted counts at the gold turn, summed over benchmarks/categories."""
    cells = (
        confusion.filter(pl.col("level") == "gold_turn")
        .group_by("model", "variant", "gold", "emitted")
        .agg(pl.col("count").sum())
    )
    plots = []
    for index, model in enumerate(sorted(cells["model"].unique().to_list())):
        frame = cells.filter(pl.col("model") == model)
        variants = sorted(frame["variant"].unique().to_list())
        golds = _ordered(frame["gold"].to_list(), GOLD_CLASSES)
        emitted = _ordered(frame["emitted"].to_list(), EMITTED)
        counts = {
            (r["variant"], r["gold"], r["emitted"]): r["count"]
            for r in frame.iter_rows(named=True)
        }
        with style():
            figure = new_figure(2.2 + 3.4 * len(variants), 1.6 + 0.45 * len(golds))
            axes = figure.subplots(1, len(variants), squeeze=False)[0]
            mesh: QuadMesh | None = None
            for ax, variant in zip(axes, variants, strict=True):
                grid = [[counts.get((variant, g, e), 0) for e in emitted] for g in golds]
                share = [[c / (sum(row) or 1) for c in row] for row in grid]
                mesh = ax.pcolormesh(share, cmap="Blues", vmin=0, vmax=1,
                                     edgecolors="white", linewidth=0.5)
                for i, row in enumerate(grid):
                    for j, count in enumerate(row):
                        ax.text(j + 0.5, i + 0.5, str(count), ha="center", va="center",
                                fontsize=8, color="white" if share[i][j] > 0.6 else "black")
                ax.set_xticks([j + 0.5 for j in range(len(emitted))], emitted,
                              rotation=35, ha="right")
                ax.set_yticks([i + 0.5 for i in range(len(golds))], golds)
                ax.invert_yaxis()
                ax.set_xlabel("class emitted at the gold turn")
                ax.set_ylabel("gold class")
                ax.set_title(variant)
            assert mesh is not None  # a model of the cells has a variant at least
            figure.colorbar(mesh, ax=axes, label="row share")
            figure.suptitle(model)
            svg = to_svg(figure, f"fig-heat-{index}", f"gold x emitted heatmap, {model}")
        plots.append(Plot(f"heatmap-{index}", model,
                          "Scored cases by gold class (rows) and the class emitted at the gold "
                          "turn (columns), summed over this model's benchmarks and categories; "
                          "numbers are counts, shading is the share of the row.", svg))
    return plots


def profile(triples: pl.DataFrame, model: str, variant: str, index: int) -> Plot | None:
    """One model's calibration profile under `variant`: per category (its gold class below
    the name), GAR with its 95% Wilson interval beside Acc and TER; None without a scored cell.
    One panel per benchmark."""
    rows = triples.filter((pl.col("model") == model) & (pl.col("variant") == variant)
                          & pl.col("gar").is_not_null())
    if rows.height == 0:
        return None
    benchmarks = sorted(rows["benchmark"].unique().to_list())
    bars = (("gar", "GAR", "#1f5fa8"), ("acc", "Acc", "#ff7f0e"), ("ter", "TER", "#9a9a9a"))
    with style():
        per_panel = [rows.filter(pl.col("benchmark") == b).height for b in benchmarks]
        figure = new_figure(max(3.2, 1.0 + 0.5 * sum(per_panel)), 2.7)
        axes = figure.subplots(1, len(benchmarks), squeeze=False, width_ratios=per_panel)[0]
        for ax, benchmark in zip(axes, benchmarks, strict=True):
            cells = rows.filter(pl.col("benchmark") == benchmark).sort("gold_action", "category")
            for b, (rate, name, color) in enumerate(bars):
                xs = [x - 0.27 + 0.27 * b for x in range(cells.height)]
                values = cells[rate].to_list()
                if rate == "gar":
                    err = [[v - lo for v, lo in zip(values, cells["gar_lo"], strict=True)],
                           [hi - v for v, hi in zip(values, cells["gar_hi"], strict=True)]]
                    ax.bar(xs, values, 0.27, color=color, label=name, yerr=err,
                           error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "0.2"})
                    for x, value in zip(xs, values, strict=True):  # a GAR of 0 has no bar
                        ax.text(x, 0.01, f"{value:.2f}".rstrip("0").rstrip("."), fontsize=5.5,
                                ha="center", va="bottom", color="#1f5fa8", rotation=90)
                else:
                    ax.bar(xs, values, 0.27, color=color, label=name)
            labels = [f"{c.removeprefix('multi_turn_')}\n({g}, n={n})" for c, g, n in
                      cells.select("category", "gold_action", "n").iter_rows()]
            ax.set_xticks(range(cells.height), labels, rotation=40, ha="right", fontsize=7)
            ax.set_ylim(0, 1.28)  # the band above 1 holds the legend
            ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
            ax.set_title(benchmark if len(benchmarks) > 1 else f"{model} · {variant}")
        axes[0].set_ylabel("rate")
        axes[0].legend(loc="upper left", ncols=3, fontsize=7, frameon=False)
        if len(benchmarks) > 1:
            figure.suptitle(f"{model} · {variant}")
        svg = to_svg(figure, f"fig-profile-{index}", f"calibration profile, {model}")
    return Plot(f"profile-{index}", model,
                f"Under {variant}: per category (gold class, scored cases), GAR with its 95% "
                "Wilson interval, Acc and TER.", svg)


def gar_acc(triples: pl.DataFrame, compact: bool = False) -> Plot | None:
    """GAR vs Acc, one point per (model, category) with Wilson intervals, a panel per variant
    that has a scored case; None when no cell has one (n = 0 cells have no point).
    `compact`: a small figure for the headline."""
    rows = triples.filter(pl.col("gar").is_not_null() & pl.col("acc").is_not_null())
    if rows.height == 0:
        return None
    variants = sorted(rows["variant"].unique().to_list())
    models = sorted(rows["model"].unique().to_list())
    benchmarks = rows["benchmark"].n_unique()
    labels = sorted({_label(r, benchmarks) for r in rows.iter_rows(named=True)})
    color = {model: _color(i) for i, model in enumerate(models)}
    marker = {label: MARKERS[i % len(MARKERS)] for i, label in enumerate(labels)}
    with style():
        size = (1.7 + 2.6 * len(variants), 2.7) if compact else (3.0 + 5.0 * len(variants), 5.4)
        figure = new_figure(*size)
        axes = figure.subplots(1, len(variants), squeeze=False)[0]
        for ax, variant in zip(axes, variants, strict=True):
            ax.fill_between([0, 1], [0, 1], [1, 1], color="#d62728", alpha=0.07, linewidth=0)
            ax.plot([0, 1], [0, 1], linestyle="--", color="0.35", linewidth=1)
            ax.text(0.5, 0.53, "above: Acc > GAR (masking)", rotation=45, fontsize=7,
                    rotation_mode="anchor", ha="center", va="bottom", color="#a01c1c",
                    transform_rotates_text=True)
            for r in rows.filter(pl.col("variant") == variant).iter_rows(named=True):
                ax.errorbar(r["gar"], r["acc"],
                            xerr=[[r["gar"] - r["gar_lo"]], [r["gar_hi"] - r["gar"]]],
                            yerr=[[r["acc"] - r["acc_lo"]], [r["acc_hi"] - r["acc"]]],
                            fmt=marker[_label(r, benchmarks)], color=color[r["model"]],
                            markersize=6, elinewidth=0.7, alpha=0.85)
            ax.set_xlim(-0.03, 1.03)
            ax.set_ylim(-0.03, 1.03)
            ax.set_aspect("equal")
            ax.set_xlabel("GAR" if compact else "GAR (gold action recall)")
            ax.set_ylabel("Acc" if compact else "Acc (benchmark verdict)")
            ax.set_title(variant)
        handles = [Line2D([], [], color=color[m], marker="o", linestyle="", label=m)
                   for m in models]
        handles += [Line2D([], [], color="0.3", marker=marker[c], linestyle="", label=c)
                    for c in labels]
        if handles:
            figure.legend(handles=handles, loc="outside right upper",
                          fontsize=7 if compact else None)
        svg = to_svg(figure, "fig-scatter", "GAR versus Acc per model and category")
    return Plot("gar-acc", "GAR vs Acc",
                "One point per (model, category), with 95% Wilson intervals on both axes. The "
                "dashed line is Acc = GAR. Points above it (shaded) pass more cases than emit "
                "the gold action class: the grader accepts trajectories without the gold "
                "action (grader masking).", svg)


def _metric_order(metrics: list[str]) -> list[str]:
    return _ordered(metrics, tuple(RATES))


def shifts(shift: pl.DataFrame) -> list[Plot]:
    """Per (model, variant), bars of delta per category, grouped by metric (p < 0.05 starred);
    a (model, variant) with no paired case anywhere (every delta null) has no plot."""
    plots = []
    pairs = (shift.group_by("model", "variant").agg(pl.col("delta").is_not_null().any())
             .filter("delta").select("model", "variant").sort("model", "variant"))
    for index, (model, variant) in enumerate(pairs.iter_rows()):
        frame = shift.filter((pl.col("model") == model) & (pl.col("variant") == variant))
        benchmarks = frame["benchmark"].n_unique()
        records = frame.iter_rows(named=True)
        values = {(_label(r, benchmarks), r["metric"]): r for r in records}
        labels = sorted({label for label, _ in values})
        metrics = _metric_order([metric for _, metric in values])
        width = 0.8 / len(metrics)
        with style():
            figure = new_figure(max(5.0, 2.4 + 0.9 * len(labels) * max(1, len(metrics) / 2)), 3.6)
            ax = figure.subplots()
            for m, metric in enumerate(metrics):
                xs, deltas, stars = [], [], []
                for x, label in enumerate(labels):
                    row = values.get((label, metric))
                    if row is None or row["delta"] is None:
                        continue
                    xs.append(x - 0.4 + width * (m + 0.5))
                    deltas.append(row["delta"])
                    p = row.get("p_value")
                    stars.append(p is not None and p < SIGNIFICANT)
                bars = ax.bar(xs, deltas, width, label=metric, color=_color(m))
                for bar, star in zip(bars, stars, strict=True):
                    if star:
                        top = bar.get_height()
                        ax.annotate("*", (bar.get_x() + bar.get_width() / 2, top),
                                    ha="center", va="bottom" if top >= 0 else "top", fontsize=12)
            ax.axhline(0, color="0.3", linewidth=0.8)
            ax.margins(y=0.15)
            ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
            ax.set_ylabel("delta")
            ax.set_title(f"{model} · {variant}")
            ax.legend(loc="best")
            svg = to_svg(figure, f"fig-shift-{index}", f"variant shift, {model}, {variant}")
        plots.append(Plot(f"shift-{index}", f"{model} · {variant}",
                          f"Delta of each metric per category under variant {variant}; "
                          f"* marks p < {SIGNIFICANT}.", svg))
    return plots
