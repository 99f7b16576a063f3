"""Stage: every classifier profile against the labelled corpus (P/R/F1, accuracy, kappa)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from toolcalib.classify.choose import choose_profile
from toolcalib.classify.judge import JudgeProfile
from toolcalib.classify.validation import render_markdown, validation_scores
from toolcalib.jsonio import atomic_write_bytes
from toolcalib.metrics.validation import validation_frames
from toolcalib.stages import Arg, JudgeSpec, JudgeStore, log


def run(corpus: str, profiles: Sequence[str], out_dir: str, judge_spec: JudgeSpec = None,
        store: JudgeStore = None,
        sources: Annotated[Sequence[str] | None, Arg(
            "only the corpus rows of these sources (e.g. published-heldout)")] = None) -> None:
    """`judge_spec` and `store`: the judge model and the response store, for profile `judge`;
    `sources`: only the corpus rows of these sources (all rows when None)."""
    chosen = [choose_profile(name, judge_spec, store) for name in profiles]
    table, summary = validation_frames(*validation_scores(corpus, chosen, sources))
    out = Path(out_dir)
    for name, frame in (("classifier_validation.csv", table),
                        ("classifier_summary.csv", summary)):
        atomic_write_bytes(out / name, frame.write_csv(float_precision=6).encode("utf-8"))
    atomic_write_bytes(out / "classifier_validation.md",
                       render_markdown(table, summary).encode("utf-8"))
    for profile in chosen:
        if isinstance(profile, JudgeProfile):
            log(profile.summary())
    log(f"validated {', '.join(profiles)} on {corpus} -> {out}")
