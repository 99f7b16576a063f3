"""Stage: every classifier profile against the labelled corpus (P/R/F1, accuracy, kappa)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolcalib.classify.validation import render_markdown, validation_frames
from toolcalib.jsonio import atomic_write_bytes
from toolcalib.stages import log


def run(corpus: str, profiles: Sequence[str], out_dir: str) -> None:
    table, summary = validation_frames(corpus, list(profiles))
    out = Path(out_dir)
    for name, frame in (("classifier_validation.csv", table),
                        ("classifier_summary.csv", summary)):
        atomic_write_bytes(out / name, frame.write_csv(float_precision=6).encode("utf-8"))
    atomic_write_bytes(out / "classifier_validation.md",
                       render_markdown(table, summary).encode("utf-8"))
    log(f"validated {', '.join(profiles)} on {corpus} -> {out}")
