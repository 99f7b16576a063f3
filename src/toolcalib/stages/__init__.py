"""One module per pipeline stage, each with `run(**args)`: read the stage's inputs, run the
core, write its outputs atomically with rows in a stable order (same inputs, same bytes).

The CLI imports only the stage it runs, so each stage's code closure is exact (see
`pipeline.codedeps`).
"""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(f"[toolcalib] {message}", file=sys.stderr, flush=True)
