"""Metrics: per-case table, (GAR, TER, Acc) triples, confusion counts, and their artifacts."""

from toolcalib.metrics.confusion import confusion
from toolcalib.metrics.inputs import action_table, gold_table, score_table
from toolcalib.metrics.markdown import triples_markdown
from toolcalib.metrics.paired import compare_models, mcnemar_exact, paired, shift_table
from toolcalib.metrics.per_case import per_case
from toolcalib.metrics.triples import triples
from toolcalib.metrics.wilson import wilson
from toolcalib.metrics.write import metrics_tree, write_outputs

__all__ = [
    "action_table",
    "compare_models",
    "mcnemar_exact",
    "paired",
    "shift_table",
    "confusion",
    "gold_table",
    "metrics_tree",
    "per_case",
    "score_table",
    "triples",
    "triples_markdown",
    "wilson",
    "write_outputs",
]
