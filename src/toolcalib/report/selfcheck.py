"""The reference policies' invariants: what each policy must score, checked on the triples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from toolcalib.benchmarks import get_benchmark

POLICY_PREFIX = "policy-"
"""The default config names its reference policies `policy-<kind>` (backend `policy`)."""


@dataclass(frozen=True)
class Check:
    """One invariant of one policy model and where it does not hold."""

    model: str
    invariant: str
    cells: int
    failed: list[str]
    """`variant/benchmark/category (value)` of each cell where it does not hold."""

    @property
    def holds(self) -> bool:
        return not self.failed


Rule = tuple[str, Callable[[dict[str, Any]], bool]]

INVARIANTS: dict[str, list[Rule]] = {
    "oracle": [("GAR = 1 and Acc = 1 in every cell (the instruments agree with the ground truth)",
                lambda r: r["gar"] == 1 and r["acc"] == 1)],
    "never_call": [("TER = 0 in every cell", lambda r: r["ter"] == 0),
                   ("GAR = 0 in every cell (it only answers `other`, no gold class)",
                    lambda r: r["gar"] == 0)],
    "always_call": [("TER = 1 in every multi-turn cell",
                     lambda r: _single_step(r) or r["ter"] == 1),
                    ("TER = 1 in irrelevance cells but for cases offering no tool (at most "
                     "1% of a cell)",
                     lambda r: not _single_step(r) or r["ter_k"] >= 0.99 * r["n"])],
    "always_ask": [("TER = 0 in every cell", lambda r: r["ter"] == 0),
                   ("GAR = 1 where the gold class is ask, else 0",
                    lambda r: r["gar"] == (r["gold_action"] == "ask"))],
    "always_refuse": [("TER = 0 in every cell", lambda r: r["ter"] == 0),
                      ("GAR = 1 where the gold class is refuse, else 0",
                       lambda r: r["gar"] == (r["gold_action"] == "refuse"))],
}
"""Per policy kind, each invariant as (statement, test of one scored triple row)."""


def _single_step(row: dict[str, Any]) -> bool:
    """Whether the row's category is answered in one emission (`Benchmark.single_step`: BFCL's
    irrelevance sets); every other category is multi-turn, τ²'s domains included."""
    return row["category"] in get_benchmark(row["benchmark"]).single_step


def policy_kinds(models: list[str], policies: dict[str, str] | None) -> dict[str, str]:
    """Model name -> policy kind: `policies` when given (from the config's `backend: policy`
    models), else every model named `policy-<kind>`."""
    if policies is not None:
        return {m: policies[m] for m in models if m in policies}
    return {m: m.removeprefix(POLICY_PREFIX) for m in models if m.startswith(POLICY_PREFIX)}


def checks(triples: pl.DataFrame, kinds: dict[str, str]) -> list[Check]:
    """Every invariant of every policy model with a known kind, over its scored cells."""
    out = []
    for model in sorted(kinds):
        rows = [r for r in triples.filter((pl.col("model") == model) & (pl.col("n") > 0))
                .sort("variant", "benchmark", "category").iter_rows(named=True)]
        for invariant, test in INVARIANTS.get(kinds[model], []):
            failed = [f"{r['variant']}/{r['benchmark']}/{r['category']} (GAR {r['gar']:.3f}, "
                      f"TER {r['ter']:.3f}, Acc {r['acc']:.3f})" for r in rows if not test(r)]
            out.append(Check(model, invariant, len(rows), failed))
    return out
