"""Progress of a long generation on stderr (and so in the rule's log): done/total, rate, ETA."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    def __init__(self, label: str, total: int, *, every_s: float = 10.0,
                 stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.every_s = label, total, every_s
        self.stream = stream or sys.stderr
        self.clock = clock
        self.start = self.last = clock()
        self.done = 0

    def line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        remaining = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = "?" if remaining == float("inf") else _duration(remaining)
        share = 100.0 * self.done / self.total if self.total else 100.0
        return (f"[toolcalib] {self.label}: {self.done}/{self.total} cases ({share:.0f}%), "
                f"{rate * 3600:.1f} cases/h, elapsed {_duration(elapsed)}, ETA {eta}")

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = self.clock()
        if self.done >= self.total or now - self.last >= self.every_s:
            self.last = now
            print(self.line(), file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"
