"""Rows of some sources written into the classifier corpus where the first of them stood."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any


def merged(corpus: str, rows: list[dict[str, Any]], sources: Collection[str]) -> str:
    """The corpus with its rows of `sources` replaced by `rows` where the first of them stood
    (appended when there is none; other lines byte-kept, in order)."""
    lines = corpus.splitlines()
    mine = {i for i, line in enumerate(lines) if json.loads(line)["source"] in sources}
    at = min(mine, default=len(lines))
    kept = [line for i, line in enumerate(lines) if i not in mine]
    return "".join(line + "\n" for line in
                   kept[:at] + [json.dumps(row, ensure_ascii=False) for row in rows] + kept[at:])
