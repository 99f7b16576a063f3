"""Matplotlib figures as deterministic, self-contained inline SVG."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

RC: dict[RcKeyType, object] = {
    "svg.hashsalt": "toolcalib-report",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
}
"""Overrides of matplotlib's defaults: a fixed id salt and text kept as text (no glyph paths)."""

_STRIP = [
    re.compile(r"\A.*?(?=<svg\b)", re.S),  # XML declaration and DOCTYPE
    re.compile(r"\s*<metadata>.*?</metadata>", re.S),  # RDF block (creator, URLs)
    re.compile(r'\s*<style type="text/css">.*?</style>', re.S),  # global `*{...}` rule
    re.compile(r'\s+xmlns(?::\w+)?="[^"]*"'),  # implied by inline SVG in HTML
]


@contextmanager
def style() -> Iterator[None]:
    """Matplotlib's default style plus RC, restored on exit (no user matplotlibrc leaks in)."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure on the Agg canvas (no pyplot, no global figure registry)."""
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def to_svg(figure: Figure, prefix: str, label: str) -> str:
    """The figure as an `<svg>` element whose ids all start with `prefix-` (unique per page).

    Call inside `style()`: the svg.* settings are read when saving.
    """
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    for pattern in _STRIP:
        text = pattern.sub("", text)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = text.replace("url(#", f"url(#{prefix}-").replace('href="#', f'href="#{prefix}-')
    attributes = f'<svg class="fig" role="img" aria-label="{html.escape(label)}"'
    return text.replace("<svg", attributes, 1).strip()

