"""Stage: confirm verdicts (the rule's, the judge's) against the hand-labelled corpus of write
contexts: accuracy, kappa, confusion counts (`classify.confirm_validation`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from toolcalib.classify.choose import choose_profile
from toolcalib.classify.confirm_validation import (
    SUMMARY_COLUMNS,
    confirm_validation,
    render_markdown,
)
from toolcalib.jsonio import atomic_write_bytes
from toolcalib.metrics.rows import csv_bytes
from toolcalib.stages import JudgeSpec, JudgeStore, log


def run(corpus: str, profiles: Sequence[str], out_dir: str, judge_spec: JudgeSpec = None,
        store: JudgeStore = None) -> None:
    """`judge_spec` and `store`: the judge model and the response store, for profile `judge`."""
    chosen = [choose_profile(name, judge_spec, store) for name in profiles]
    started = time.monotonic()
    summary = confirm_validation(corpus, chosen)
    out = Path(out_dir)
    atomic_write_bytes(out / "confirm_validation.csv", csv_bytes(summary, SUMMARY_COLUMNS))
    atomic_write_bytes(out / "confirm_validation.md", render_markdown(summary).encode("utf-8"))
    for profile in chosen:
        if summary_line := profile.summary():
            log(summary_line)
    log(f"confirm verdicts of {', '.join(profiles)} on {corpus} -> {out} "
        f"({time.monotonic() - started:.1f} s)")
