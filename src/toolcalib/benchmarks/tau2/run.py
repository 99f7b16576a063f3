"""One τ² results file as read (`results.read_run`): what its import, its pairing
(`pairing`) and its trials (`trials`) read of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Run:
    """One results file, shape-checked: its domain, tasks by id and raw simulations."""

    path: Path
    """As the config names it (messages name the file by it)."""
    sha256: str
    """Of the file's bytes, as read."""
    domain: str
    info: dict[str, Any]
    """τ²'s `info` block: git commit, trials, step and error caps, user, agent, environment
    (its policy among them) and seed."""
    tasks: dict[str, dict[str, Any]]
    simulations: list[dict[str, Any]]

    @property
    def agent(self) -> str:
        return str((self.info.get("agent_info") or {}).get("llm"))

    @property
    def user(self) -> str:
        return str((self.info.get("user_info") or {}).get("llm"))
