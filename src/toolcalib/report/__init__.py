"""The HTML report: triples with audit links, heatmaps, GAR vs Acc, variant shifts."""

from toolcalib.report.build import FILES, ReportTables, build_report, render_html

__all__ = ["FILES", "ReportTables", "build_report", "render_html"]
