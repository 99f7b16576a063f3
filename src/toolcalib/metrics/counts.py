"""Each count of the triples as a selection of per-case rows: what it counts (the label the
report's audit listing and `toolcalib audit` both print) and which rows those are."""

from __future__ import annotations

import polars as pl

from toolcalib.metrics.rows import ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC

BOUNDS = (ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC)
"""The two bound counts, per-case rows selected by their `bound`."""

SCORED = pl.col("scored").fill_null(False)
_OUTCOME = pl.col("outcome")
COUNTED: dict[str, tuple[str, pl.Expr]] = {
    "n": ("scored cases (the denominator of every rate)", SCORED),
    "n_excluded": ("excluded cases (infrastructure outcomes, in no denominator)", ~SCORED),
    "n_context_overflow": ("cases ended by context overflow", _OUTCOME == "context_overflow"),
    "n_error": ("cases ended by an infrastructure error", _OUTCOME == "error"),
    "n_step_cap": ("scored cases ended by the step cap", SCORED & (_OUTCOME == "step_cap")),
    "n_probed": ("scored cases where the variant's probe fired",
                 SCORED & (pl.col("probes_fired") > 0)),
    "n_gar_unknown": ("scored cases whose GAR is undecided (the gold class could be in an "
                      "output the record did not keep; out of GAR's denominator)",
                      SCORED & pl.col("gold_emitted").is_null()),
    ACC_WITHOUT_GOLD: ("passed without emitting the gold class (Acc>GAR)",
                       pl.col("bound") == ACC_WITHOUT_GOLD),
    GOLD_WITHOUT_ACC: ("emitted the gold class and failed (GAR>Acc)",
                       pl.col("bound") == GOLD_WITHOUT_ACC),
}
"""Every count of `COUNTS`, in its order: its label and the per-case rows it counts."""
