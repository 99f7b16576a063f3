"""A published τ² simulation verified: re-executed tool results against the recorded ones
(`same_result`, `difference`) and the recorded reward against the recomputed one
(`recorded_verdict`, `recorded_agreement`, `disagreement`)."""

from __future__ import annotations

import json
import re
from typing import Any

from toolcalib.records import Case, Published, Trajectory


def same_result(a: str, b: str) -> bool:
    """Equal as text, or as JSON where both parse (as τ²'s evaluator compares them)."""
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except (json.JSONDecodeError, TypeError):
        return False


URL = re.compile(r"https?://\S+")


def difference(recorded: str, replayed: str) -> str:
    """A named difference between a recorded and a re-executed result."""
    if URL.sub("<url>", recorded) == URL.sub("<url>", replayed):
        return "differs only in a URL (" + ", ".join(
            sorted(set(URL.findall(recorded)) ^ set(URL.findall(replayed)))) + ")"
    return f"recorded {recorded[:80]!r}, replayed {replayed[:80]!r}"


def recorded_verdict(sim: dict[str, Any]) -> dict[str, Any]:
    """The parts of τ²'s recorded reward the scorer's verdict is compared with."""
    info = sim.get("reward_info") or {}
    reward = info.get("reward")
    return {"reward": float(reward) if isinstance(reward, int | float) else None,
            "reward_basis": info.get("reward_basis"),
            "reward_breakdown": info.get("reward_breakdown"),
            "db_match": (info.get("db_check") or {}).get("db_match"),
            "termination": sim.get("termination_reason")}


def recorded_agreement(published: Published, verdict: Any, case: Case,
                       trajectory: Trajectory) -> dict[str, Any]:
    """The recorded reward beside the recomputed one, and, where they differ, the named
    cause (a score's `details`: `recorded_reward`, `reward_disagreement`)."""
    reward = published.recorded.get("reward")
    return {"recorded_reward": reward,
            "reward_disagreement": None if reward == verdict.reward
            else disagreement(published, verdict, case, trajectory)}


def disagreement(published: Published, verdict: Any, case: Case,
                 trajectory: Trajectory) -> str:
    """Why the recorded reward differs from the scorer's: the first part that differs, with
    the evidence at hand (re-executed results that differ, the writes made and due, how the
    termination was read)."""
    recorded = published.recorded
    task = case.environment["task"]
    if recorded.get("reward") is None:
        return "no reward recorded"
    basis = recorded.get("reward_basis") or []
    if missing := sorted(set(basis) - {"DB", "COMMUNICATE", "ACTION", "ENV_ASSERTION"}):
        return f"reward part not computed: {', '.join(missing)}"
    task_basis = (task.get("evaluation_criteria") or {}).get("reward_basis")
    if task_basis is not None and sorted(basis) != sorted(task_basis):
        return f"recorded reward basis {basis}, the task's {task_basis}"
    read = "" if published.termination == "recorded" else f" ({published.termination})"
    if verdict.db_match is None:
        return f"not evaluated here: {verdict.reason}{read}"
    parts = recorded.get("reward_breakdown") or {}
    for part, value in (("DB", verdict.db_match), ("COMMUNICATE", verdict.communicate)):
        if part in parts and value is not None and bool(parts[part]) != value:
            why = f"{part}: recorded {parts[part]:g}, recomputed {float(value):g}"
            if part == "DB":
                why += _db_evidence(published, case, trajectory)
            return why + read
    return f"unexplained: recorded {recorded.get('reward')}, recomputed {verdict.reward}{read}"


def _db_evidence(published: Published, case: Case, trajectory: Trajectory) -> str:
    """What the trajectory shows about a database verdict the record contradicts."""
    if published.differences:
        return (f"; {len(published.differences)} tool result(s) replay differently, first: "
                f"{published.differences[0]}")
    writes = set(case.environment.get("write_tools") or ())
    made = [c.name for turn in trajectory.turns for step in turn.steps
            for c in step.emission.tool_calls if c.name in writes]
    actions = (case.environment["task"].get("evaluation_criteria") or {}).get("actions") or []
    due = [a["name"] for a in actions if a["name"] in writes]
    return (f"; writes made: {', '.join(made) or 'none'}; the task's reference writes: "
            f"{', '.join(due) or 'none'}")
