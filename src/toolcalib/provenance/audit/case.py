"""One case replayed: per turn its messages, steps, emissions, calls, results and classes; its
gold and verdict; and whether the audited metric counts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcalib.jsonio import InputError, builtins, parse_line
from toolcalib.provenance.audit.artifacts import ARTIFACTS
from toolcalib.provenance.audit.recompute import KEYS, key_text, natural_key
from toolcalib.provenance.lock import ProvenanceError, require
from toolcalib.records import Trajectory

RESULT_CHARS = 300
"""Execution results longer than this are cut, with a marker saying how much was cut."""


def truncate(text: str, limit: int = RESULT_CHARS) -> str:
    """`text` cut to `limit` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated: {len(text) - limit} more chars]"


def _read_trajectory(path: Path, case_id: str) -> tuple[Trajectory | None, list[str]]:
    """The case's trajectory (None if absent) and every case id the file holds."""
    seen: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            seen.append(json.loads(line).get("case_id"))
            if seen[-1] == case_id:
                try:
                    return parse_line(line, Trajectory, str(path), len(seen)), seen
                except InputError as error:
                    raise ProvenanceError(f"{path}:{len(seen)}: not a trajectory record of this "
                                     f"toolcalib version: {error}") from error
    return None, seen


def align_messages(trajectory: Trajectory) -> dict[int, list[dict[str, Any]]]:
    """Each turn's user/system messages, each tagged with the step index it came before (None:
    after the turn's last step), replaying how generation appended them: a turn's messages,
    then per step either the assistant reply and one tool message per result or, for a step
    the probe dropped, the one message the probe added."""
    messages = trajectory.messages
    position = 0
    out: dict[int, list[dict[str, Any]]] = {}

    def block() -> list[Any]:
        nonlocal position
        start = position
        while position < len(messages) and messages[position].role in ("user", "system"):
            position += 1
        return list(messages[start:position])

    def tag(turn: int, found: list[Any], dropped: list[int], then: int | None) -> None:
        # one probe message follows each dropped step; what precedes them opened the turn
        cut = max(len(found) - len(dropped), 0)
        befores = [dropped[0] if dropped else then] * cut + [
            (dropped + [then])[i + 1] for i in range(len(found) - cut)]
        out.setdefault(turn, []).extend(
            {"role": m.role, "content": m.content, "before_step": before}
            for m, before in zip(found, befores, strict=True))

    last = trajectory.turns[-1].index if trajectory.turns else None
    for trace in trajectory.turns:
        out.setdefault(trace.index, [])
        dropped: list[int] = []
        for step in trace.steps:
            if step.dropped:
                dropped.append(step.index)
                continue
            tag(trace.index, block(), dropped, step.index)
            dropped = []
            if position < len(messages) and messages[position].role == "assistant":
                position += 1
                while position < len(messages) and messages[position].role == "tool":
                    position += 1
        if dropped or not any(not step.dropped for step in trace.steps):
            tag(trace.index, block(), dropped, None)
    if last is not None and position < len(messages):
        out[last].extend({"role": m.role, "content": m.content, "before_step": None}
                         for m in messages[position:])
    return out


def _class(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"action": row["action"], "rule": row["rule"], "evidence": row["evidence"]}


def trajectory_id(case_id: str) -> str:
    """The trajectory a per-case row comes from: a unit of a case (`<case>#write2`, one per
    write call on τ²) is read from its case's trajectory."""
    return case_id.partition("#")[0]


def case_detail(root: Path, cell: tuple[str, str, str, str], case_id: str,
                metric: dict[str, Any]) -> dict[str, Any]:
    """One case in full: per turn its messages, steps and classes; gold; the verdict; whether
    it is in the `metric`'s numerator and denominator (as `recompute` returns them)."""
    fields = dict(zip(KEYS, cell, strict=True))
    paths = {role: template.format(**fields, release="") for role, template in ARTIFACTS
             if role in ("trajectories", "actions", "scores")}
    for role, relative in paths.items():
        require(root, relative, role)
    trajectory, seen = _read_trajectory(root / paths["trajectories"], trajectory_id(case_id))
    if trajectory is None:
        known = ", ".join(sorted(seen, key=natural_key)) or "(none)"
        raise ProvenanceError(f"no case {case_id!r} in {paths['trajectories']}; cases of "
                         f"{key_text(cell)}: {known}")
    rows = _case_lines(root / paths["actions"], trajectory.case_id)
    verdict = next(iter(_case_lines(root / paths["scores"], trajectory.case_id)), None)
    turn_rows = {r["turn"]: r for r in rows if r["level"] == "turn"}
    step_rows = {(r["turn"], r["step"]): r for r in rows if r["level"] != "turn"}
    traces = {trace.index: trace for trace in trajectory.turns}
    inputs = align_messages(trajectory)
    turns: list[dict[str, Any]] = []
    for index in sorted(set(turn_rows) | set(traces)):
        trace, turn_row = traces.get(index), turn_rows.get(index)
        steps = []
        for step in trace.steps if trace else []:
            emission = step.emission
            steps.append({
                "index": step.index, "dropped": step.dropped, "text": emission.text,
                "calls": [{"name": c.name, "arguments": c.arguments} for c in emission.tool_calls],
                "structured": emission.structured, "parse": emission.parse,
                "parse_error": emission.parse_error,
                "results": [truncate(result) for result in step.results],
                "class": _class(step_rows.get((index, step.index))),
            })
        turns.append({
            "index": index,
            "gold_action": turn_row["gold_action"] if turn_row else None,
            "is_gold_turn": bool(turn_row and turn_row["is_gold_turn"]),
            "reached": trace is not None, "ended": trace.ended if trace else None,
            "class": _class(turn_row),
            "probes_fired": turn_row.get("probes_fired", 0) if turn_row else 0,
            "messages": inputs.get(index, []), "steps": steps,
        })
    gold_turn = next((t["index"] for t in turns if t["is_gold_turn"]), None)
    details = verdict.get("details") if verdict else None
    return {
        "case_id": case_id,
        "outcome": trajectory.outcome,
        "error": trajectory.error,
        "gold_action": next((t["gold_action"] for t in turns if t["is_gold_turn"]), None),
        "gold_turn": gold_turn,
        "in_numerator": case_id in metric["numerator_cases"],
        "in_denominator": case_id in metric["denominator_cases"],
        "verdict": None if verdict is None else {
            "scored": verdict["scored"], "passed": verdict["passed"],
            "error_type": verdict.get("error_type"), "error_message": verdict.get("error_message"),
            "failed_turn": verdict.get("failed_turn"),
            "details": json.loads(details) if details else None,
        },
        "interventions": [builtins(i) for i in trajectory.interventions],
        "turns": turns,
    }


def _case_lines(path: Path, case_id: str) -> list[dict[str, Any]]:
    """The rows of one case in a JSON-lines table (an action or score table)."""
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [row for row in rows if row["case_id"] == case_id]
