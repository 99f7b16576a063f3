"""The benchmark-neutral verdict record: one case's Acc and why it failed."""

from __future__ import annotations

from typing import Any

from toolcalib.views import View


class Score(View):
    """One case's verdict: a row of a score table (its fields, `__slots__`, are the table's
    columns). `scored` is False for infrastructure outcomes (`error`, `context_overflow`),
    never scored; `error_type` is the benchmark's name for a failure (BFCL:
    `multi_turn:instance_state_mismatch`; τ²: `tau2:db_mismatch`); `details`: differences,
    missing results."""

    __slots__ = ("case_id", "benchmark", "category", "model", "variant", "scored", "passed",
                 "error_type", "error_message", "failed_turn", "details")

    def __init__(self, case_id: str, benchmark: str, category: str, model: str, variant: str,
                 scored: bool, passed: bool | None, error_type: str | None = None,
                 error_message: str | None = None, failed_turn: int | None = None,
                 details: dict[str, Any] | None = None) -> None:
        self.case_id, self.benchmark, self.category = case_id, benchmark, category
        self.model, self.variant, self.scored, self.passed = model, variant, scored, passed
        self.error_type, self.error_message = error_type, error_message
        self.failed_turn = failed_turn
        self.details = {} if details is None else details
