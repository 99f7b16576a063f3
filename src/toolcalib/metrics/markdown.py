"""The triples as a readable markdown table."""

from __future__ import annotations

from typing import Any

import polars as pl

from toolcalib.metrics.rows import (
    ACC_WITHOUT_GOLD,
    DECIDABLE,
    GOLD_WITHOUT_ACC,
    KEYS,
    STRUCTURAL,
    TRIPLES,
)

LABELS = TRIPLES.labels()
"""How the report heads each labelled column of the triples."""
SHOWN = {rate: LABELS[rate] for rate in ("gar", "gar_turn", "ter", "ter_turn", "acc")}
"""The rates the markdown table shows, in order."""
STRUCTURAL_LABEL = LABELS[STRUCTURAL]
"""The published structural reading beside GAR (not GAR): shown after the rates."""
FOOTER = """\
Rates are shares of scored cases, in percent, with the count (k/n) and the 95% Wilson score
interval [low, high]. Weighting: every case has weight 1 within its (model, variant, benchmark,
category); no group is pooled with another (no cross-category or cross-benchmark averages).
GAR: the union of the case's turn classes contains its gold class; GAR@gold turn: the class at
the decision turn is that turn's gold. TER: some turn is a tool call; TER@gold turn: the decision
turn is. Acc: the benchmark's own verdict (a step-cap ending is a failure).
Unknown: a step output a published record did not keep (no call, no text, yet the model
produced output); where the gold class could be in it, GAR (and GAR@gold turn, at that turn)
is undecided: such a case is left out of that rate's denominator ("k/n; u unknown"; GAR
unknown counts them) and still counts in TER and Acc (an unknown output made no call).
Acc>GAR: cases passed without emitting the gold class (grader masking); GAR>Acc: cases that
emitted the gold class and failed (neither where GAR is undecided). Excluded: infrastructure
outcomes (error, context overflow), counted here and left out of every denominator; a cell
whose cases are all excluded has n = 0 and no rates ("–").
GAR structural (τ², published): not GAR, the published method's partly structural reading of
τ²'s gold classes, beside GAR on the same trajectories: refuse = no call to a write tool;
tool_call = every reference action matched (τ²'s action checks); ask = at least one emission
the `paper` cue profile classes ask (whichever profile classified the run); confirm = the
write's confirm verdict, as GAR. Its denominator is the scored cases with a reading (n on τ²);
"–" where the benchmark has none (BFCL).
"""


def denominator(row: dict[str, Any], rate: str) -> int:
    """A rate's denominator: `<rate>_n` where the table has one (`gar_structural`), else n."""
    count: int = row.get(f"{rate}_n", row["n"])
    return count


def undecided(row: dict[str, Any], rate: str) -> int:
    """The scored cases a rate of `DECIDABLE` leaves out as undecided (0 for any other)."""
    return row["n"] - denominator(row, rate) if rate in DECIDABLE else 0


def rate_text(row: dict[str, Any], rate: str) -> str:
    """`12.5% (1/8) [2.2, 47.1]` (`(1/8; 2 unknown)` where scored cases are undecided, `– (3
    unknown)` where none is decided), `– (n = 0)` for a cell with no scored case, or `–` for a
    reading the cell's benchmark does not define (no denominator of its own, scored cases)."""
    unknown = undecided(row, rate)
    if row[rate] is None:  # no denominator: no rate, no interval
        if unknown:
            return f"– ({unknown} unknown)"
        return "–" if row["n"] and not denominator(row, rate) else f"– (n = {row['n']})"
    low, high = row[f"{rate}_lo"], row[f"{rate}_hi"]
    k, n = row[f"{rate}_k"], denominator(row, rate)
    note = f"; {unknown} unknown" if unknown else ""
    return f"{100 * row[rate]:.1f}% ({k}/{n}{note}) [{100 * low:.1f}, {100 * high:.1f}]"


def line(cells: list[Any]) -> str:
    """One markdown table row (`|` in a cell escaped)."""
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def triples_markdown(triples: pl.DataFrame) -> str:
    """One line per triple, in the table's order, then how to read it."""
    rates = [*SHOWN, *([STRUCTURAL] if STRUCTURAL in triples.columns else [])]
    shown = ["gold_action", "n", "n_excluded", "n_step_cap", *rates, ACC_WITHOUT_GOLD,
             GOLD_WITHOUT_ACC]
    header = [*KEYS, *(LABELS[name] for name in shown)]
    lines = [line(header), line(["---"] * len(header))]
    for row in triples.iter_rows(named=True):
        lines.append(line([*(row[key] for key in KEYS),
                           *(rate_text(row, name) if name in rates else row[name]
                             for name in shown)]))
    return "\n".join(lines) + "\n\n" + FOOTER
