"""The benchmark-neutral verdict record: one case's Acc and why it failed."""

from __future__ import annotations

from typing import Any

import msgspec


class Score(msgspec.Struct, frozen=True, kw_only=True):
    """One case's verdict: a row of a score table (its fields are the table's columns).
    `scored` is False for infrastructure outcomes (`error`, `context_overflow`), never scored;
    `error_type` is the benchmark's name for a failure (BFCL:
    `multi_turn:instance_state_mismatch`; τ²: `tau2:db_mismatch`); `details`: differences,
    missing results."""

    case_id: str
    benchmark: str
    category: str
    model: str
    variant: str
    scored: bool
    passed: bool | None
    error_type: str | None = None
    error_message: str | None = None
    failed_turn: int | None = None
    details: dict[str, Any] = {}
