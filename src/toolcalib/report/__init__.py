"""The HTML report: triples with audit links, heatmaps, GAR vs Acc, variant shifts."""

from toolcalib.report.build import FILES, build_report, render_html

__all__ = ["FILES", "build_report", "render_html"]
