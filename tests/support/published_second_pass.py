"""Agreement of the blind second reading of the published turns with their first labels.

The second reader labelled the 100 rows of `published_turns_second_pass.jsonl` (text and
context only) under the same rubric, before reading the first labels
(`published_turn_labels.jsonl`, unchanged). Run by hand (not a test):

    python -m tests.support.published_second_pass   # the figures docs/history.md states

Each held-out draw (`published_heldout_turns.jsonl`, `published_heldout2_turns.jsonl`,
`published_heldout3_turns.jsonl`) has a second blind reading of all its rows
(`HELDOUT_SECOND_LABELS`), paired the same way (`heldout_agreement`).

`tests/test_published_turns.py` checks the file's ids and labels and that docs state these figures.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.support.published_turns import DATA, HELDOUT_DRAWS, LABELS, SECOND_PASS, read_jsonl
from toolcalib.classify.validation import cohen_kappa
from toolcalib.records import ACTION_CLASSES

SECOND_LABELS = DATA / "published_turn_second_labels.jsonl"
HELDOUT_SECOND_LABELS = {1: DATA / "published_heldout_second_labels.jsonl",
                         2: DATA / "published_heldout2_second_labels.jsonl",
                         3: DATA / "published_heldout3_second_labels.jsonl"}
"""Held-out draw -> a second blind reading of all its turns, by other readers than the first."""


@dataclass(frozen=True)
class Agreement:
    """Both readings of each second-pass turn, in the second-pass file's order."""

    ids: tuple[str, ...]
    first: tuple[str, ...]
    second: tuple[str, ...]

    def agreed(self) -> int:
        return sum(a == b for a, b in zip(self.first, self.second, strict=True))

    def kappa(self) -> float | None:
        return cohen_kappa(self.first, self.second)

    def classes(self) -> list[str]:
        """The action classes either reading gives, in `records.ACTION_CLASSES` order."""
        return [c for c in ACTION_CLASSES if c in self.first or c in self.second]

    def class_kappa(self, name: str) -> float | None:
        """Kappa of one class against the rest (both readings made binary)."""
        return cohen_kappa([name if a == name else "rest" for a in self.first],
                           [name if b == name else "rest" for b in self.second])

    def pairs(self) -> Counter[tuple[str, str]]:
        """Disagreements by (first, second) label."""
        return Counter((a, b) for a, b in zip(self.first, self.second, strict=True) if a != b)


def agreement(second_pass: Path = SECOND_PASS, second: Path = SECOND_LABELS,
              first: Path = LABELS) -> Agreement:
    """Pair the readings; the second must label exactly the second-pass rows, in their order."""
    ids = [row["id"] for row in read_jsonl(second_pass)]
    seconds = read_jsonl(second)
    if [row["id"] for row in seconds] != ids:
        raise SystemExit(f"{second.name}: ids are not those of {second_pass.name}, in order")
    firsts = {row["id"]: row["label"] for row in read_jsonl(first)}
    missing = [i for i in ids if i not in firsts]
    if missing:
        raise SystemExit(f"{first.name}: no label for {missing}")
    return Agreement(tuple(ids), tuple(firsts[i] for i in ids),
                     tuple(row["label"] for row in seconds))


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def summary(found: Agreement) -> str:
    """The figures in one line, as docs/history.md states them (whitespace aside)."""
    n = len(found.ids)
    classes = "; ".join(
        f"{c} {found.first.count(c)} / {found.second.count(c)} / "
        f"{sum(a == b == c for a, b in zip(found.first, found.second, strict=True))}, "
        f"kappa {_number(found.class_kappa(c))}" for c in found.classes())
    pairs = ", ".join(f"{a} -> {b} {k}" for (a, b), k in
                      sorted(found.pairs().items(), key=lambda item: (-item[1], item[0])))
    return (f"raw agreement {found.agreed() / n:.2f} ({found.agreed()} of {n}), Cohen's kappa "
            f"{_number(found.kappa())}; per class (first / second / both, kappa of the class "
            f"against the rest): {classes}. Disagreements (first -> second): {pairs}.")


def heldout_agreement(draw: int = 1) -> Agreement:
    """Both readings of held-out draw `draw`."""
    turns, labels, _ = HELDOUT_DRAWS[draw]
    return agreement(turns, HELDOUT_SECOND_LABELS[draw], labels)


if __name__ == "__main__":
    print(summary(agreement()))
    for draw in HELDOUT_DRAWS:
        print(summary(heldout_agreement(draw)))
