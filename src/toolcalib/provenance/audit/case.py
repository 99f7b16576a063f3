"""One case replayed: per turn its messages, steps, emissions, calls, results and classes; its
gold and verdict; and whether the audited metric counts it. A unit of a case (`<case>#write<k>`,
`<case>#<class>`) replays its case's trajectory and says what the unit is: for a write, its
call and why it was or was not confirmed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from toolcalib.jsonio import InputError, RecordIndex, builtins, parse_line
from toolcalib.provenance.audit.recompute import PER_CASE, key_text, natural_key
from toolcalib.provenance.lock import ProvenanceError, require
from toolcalib.records import Case, Message, ToolCall, Trajectory

RESULT_CHARS = 300
"""Execution results longer than this are cut, with a marker saying how much was cut."""
WRITE_UNIT = re.compile(r"#write(\d+)$")


class WriteContext(Protocol):
    """What the confirm rule reads of one write (`classify.confirm.WriteContext`)."""

    @property
    def call(self) -> ToolCall: ...
    @property
    def agent_text(self) -> str | None: ...
    @property
    def user_reply(self) -> str | None: ...


class Verdict(Protocol):
    """The confirm rule's verdict on one write (`classify.confirm.ConfirmVerdict`)."""

    @property
    def confirmed(self) -> bool: ...
    @property
    def rule(self) -> str: ...
    @property
    def evidence(self) -> str: ...


WriteVerdicts = Callable[[Case, Trajectory], Sequence[tuple[WriteContext, Verdict]]]
"""Every write call of a trajectory, in order, with the confirm rule's verdict on it: the
benchmark's write contexts (τ²: `benchmarks.tau2.writes.write_contexts`) judged by the rule
(`classify.confirm.rule_verdict`). Provenance imports neither: the caller that wires the
command hands it in (docs/architecture.md)."""


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
    the probe dropped, the one message the probe added. Where a turn records the user message
    that opened it (τ²: `TurnTrace.user`), the agent's messages before that one belong to
    the opening, not to a step: τ²'s greeting, spoken before the user's first message."""
    messages = trajectory.messages
    position = 0
    out: dict[int, list[dict[str, Any]]] = {}

    def block(opening: str | None = None) -> list[Any]:
        nonlocal position
        start = position
        if opening is not None:
            ahead = position
            while ahead < len(messages) and _spoken_before(messages[ahead]):
                ahead += 1
            if (ahead < len(messages) and messages[ahead].role == "user"
                    and messages[ahead].content == opening):
                position = ahead
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
        opening = trace.user
        for step in trace.steps:
            if step.dropped:
                dropped.append(step.index)
                continue
            tag(trace.index, block(opening), dropped, step.index)
            opening, dropped = None, []
            if position < len(messages) and messages[position].role == "assistant":
                position += 1
                while position < len(messages) and messages[position].role == "tool":
                    position += 1
        if dropped or not any(not step.dropped for step in trace.steps):
            tag(trace.index, block(opening), dropped, None)
    if last is not None and position < len(messages):
        out[last].extend({"role": m.role, "content": m.content, "before_step": None}
                         for m in messages[position:])
    return out


def _spoken_before(message: Message) -> bool:
    """A message that may precede the user's opening one: a system message or an agent's
    message without calls."""
    return message.role == "system" or (message.role == "assistant" and not message.tool_calls)


def _class(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"action": row["action"], "rule": row["rule"], "evidence": row["evidence"]}


def trajectory_id(case_id: str) -> str:
    """The trajectory a per-case row comes from: a unit of a case (`<case>#write2`, one per
    write call on τ²) is read from its case's trajectory."""
    return case_id.partition("#")[0]


def check_unit(case_id: str, cell: tuple[str, str, str, str], cell_ids: Sequence[str]) -> None:
    """A unit id (`<case>#...`) must be one of the cell's per-case rows: else one line naming
    the case's units (an unknown case is left to the trajectory's lookup)."""
    if "#" not in case_id or case_id in cell_ids:
        return
    base = trajectory_id(case_id)
    units = sorted((i for i in cell_ids if i.startswith(f"{base}#")), key=natural_key)
    raise ProvenanceError(
        f"no unit {case_id!r} in {key_text(cell)} of {PER_CASE}; units of case {base}: "
        f"{', '.join(units) or '(none)'}")


def case_detail(root: Path, cell: tuple[str, str, str, str], case_id: str,
                metric: dict[str, Any], paths: dict[str, str],
                rows: Sequence[dict[str, Any]] = (), classifier: str | None = None,
                write_verdicts: WriteVerdicts | None = None) -> dict[str, Any]:
    """One case (or unit) in full: per turn its messages, steps and classes; gold; the verdict;
    whether it is in the `metric`'s numerator and denominator (as `recompute` returns them);
    for a unit, what it is (`unit`). `paths`: the cell's artifacts by role
    (`artifacts.cell_paths`); `rows`: the cell's per-case rows (units are checked against
    them); `classifier`: the run's profile (a `judge` run's write verdicts are its model's)."""
    check_unit(case_id, cell, [row["case_id"] for row in rows])
    for role in ("trajectories", "actions", "scores"):
        require(root, paths[role], role)
    trajectory, seen = _read_trajectory(root / paths["trajectories"], trajectory_id(case_id))
    if trajectory is None:
        known = ", ".join(sorted(seen, key=natural_key)) or "(none)"
        raise ProvenanceError(f"no case {case_id!r} in {paths['trajectories']}; cases of "
                         f"{key_text(cell)}: {known}")
    actions = _case_lines(root / paths["actions"], trajectory.case_id)
    verdict = next(iter(_case_lines(root / paths["scores"], trajectory.case_id)), None)
    turn_rows = {r["turn"]: r for r in actions if r["level"] == "turn"}
    step_rows = {(r["turn"], r["step"]): r for r in actions if r["level"] != "turn"}
    traces = {trace.index: trace for trace in trajectory.turns}
    inputs = align_messages(trajectory)
    unit, problems = _unit(root, paths, case_id, trajectory, rows, classifier, write_verdicts)
    at = (unit["turn"], unit["step"], unit["call_index"]) if unit and "turn" in unit else None
    turns: list[dict[str, Any]] = []
    for index in sorted(set(turn_rows) | set(traces)):
        trace, turn_row = traces.get(index), turn_rows.get(index)
        steps = []
        for step in trace.steps if trace else []:
            emission = step.emission
            steps.append({
                "index": step.index, "dropped": step.dropped, "text": emission.text,
                "calls": [{"name": c.name, "arguments": c.arguments,
                           "unit": at == (index, step.index, n)}
                          for n, c in enumerate(emission.tool_calls)],
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
    gold_action = next((t["gold_action"] for t in turns if t["is_gold_turn"]), None)
    own = next((row for row in rows if row["case_id"] == case_id), None)
    if "#" in case_id and own is not None:  # a unit: its own gold class and turn
        gold_action, gold_turn = own["gold_action"], own["gold_turn"]
    details = verdict.get("details") if verdict else None
    return {
        "case_id": case_id,
        "outcome": trajectory.outcome,
        "error": trajectory.error,
        "gold_action": gold_action,
        "gold_turn": gold_turn,
        "in_numerator": case_id in metric["numerator_cases"],
        "in_denominator": case_id in metric["denominator_cases"],
        "verdict": None if verdict is None else {
            "scored": verdict["scored"], "passed": verdict["passed"],
            "error_type": verdict.get("error_type"), "error_message": verdict.get("error_message"),
            "failed_turn": verdict.get("failed_turn"),
            "details": json.loads(details) if details else None,
        },
        "unit": unit,
        "interventions": [builtins(i) for i in trajectory.interventions],
        "turns": turns,
        "problems": problems,
    }


def _unit(root: Path, paths: dict[str, str], case_id: str, trajectory: Trajectory,
          rows: Sequence[dict[str, Any]], classifier: str | None,
          write_verdicts: WriteVerdicts | None) -> tuple[dict[str, Any] | None, list[str]]:
    """What a unit is (None for a case itself) and what disagrees in it."""
    if "#" not in case_id:
        return None, []
    suffix = case_id.partition("#")[2]
    row = next((r for r in rows if r["case_id"] == case_id), {})
    number = WRITE_UNIT.search(case_id)
    if number is None:
        return {"kind": "gold_also", "id": case_id, "gold": suffix,
                "gold_turn": row.get("gold_turn")}, []
    cases = require(root, paths["cases"], "cases")
    try:
        case = RecordIndex(cases, Case, "id")[trajectory.case_id]
    except KeyError:
        raise ProvenanceError(f"no case {trajectory.case_id!r} in {paths['cases']}, the cases "
                              "the run was scored on") from None
    except InputError as error:
        raise ProvenanceError(str(error)) from error
    writes = _writes(case, trajectory)
    k = int(number.group(1))
    units = sum(1 for r in rows if WRITE_UNIT.search(r["case_id"])
                and trajectory_id(r["case_id"]) == trajectory.case_id)
    problems: list[str] = []
    if units != len(writes):
        problems.append(f"{case_id}: {PER_CASE} has {units} write unit(s) of case "
                        f"{trajectory.case_id}, its trajectory {len(writes)} write call(s)")
    if k > len(writes):
        problems.append(f"{case_id}: the trajectory of {trajectory.case_id} has "
                        f"{len(writes)} write call(s)")
        return {"kind": "write", "id": case_id, "number": k, "writes": len(writes)}, problems
    write = writes[k - 1]
    confirmed = row.get("gold_emitted")
    unit: dict[str, Any] = {
        "kind": "write", "id": case_id, "number": k, "writes": len(writes), **write,
        "recorded": {"confirmed": confirmed, "emitted": row.get("emitted"),
                     "gold_turn": row.get("gold_turn")},
        "verdict": None, "verdict_source": None, "agrees": None,
    }
    if classifier == "judge":
        unit["verdict_source"] = "judge"  # the judge model's verdict: not recomputed here
    elif write_verdicts is not None:
        judged = list(write_verdicts(case, trajectory))
        if len(judged) != len(writes):
            problems.append(f"{case_id}: the benchmark finds {len(judged)} write call(s) in "
                            f"{trajectory.case_id}, the audit {len(writes)}")
        else:
            context, verdict = judged[k - 1]
            unit.update(agent_text=context.agent_text, user_reply=context.user_reply,
                        verdict={"confirmed": verdict.confirmed, "rule": verdict.rule,
                                 "evidence": verdict.evidence},
                        verdict_source="rule", agrees=verdict.confirmed == confirmed)
            if not unit["agrees"]:
                problems.append(f"{case_id}: the confirm rule gives confirmed="
                                f"{verdict.confirmed} ({verdict.rule}), {PER_CASE} records "
                                f"{confirmed}")
    return unit, problems


def _writes(case: Case, trajectory: Trajectory) -> list[dict[str, Any]]:
    """Every write call of a trajectory (a call to a tool its case marks as a write:
    `environment.write_tools`), in order, with where it is, its result, and the texts the
    confirm rule reads as the benchmark defines them (`benchmarks/tau2/writes.py`): the
    agent's last text before it (of a step without calls) and, after such a text, the user's
    message that opened the write's turn."""
    tools = set(case.environment.get("write_tools") or ())
    found: list[dict[str, Any]] = []
    agent: tuple[str, int, int] | None = None
    for trace in trajectory.turns:
        for step in trace.steps:
            if step.dropped:
                continue
            for n, call in enumerate(step.emission.tool_calls):
                if call.name in tools:
                    found.append({
                        "turn": trace.index, "step": step.index, "call_index": n,
                        "call": {"name": call.name, "arguments": call.arguments},
                        "result": truncate(step.results[n]) if n < len(step.results) else None,
                        "agent_text": agent[0] if agent else None,
                        "agent_at": {"turn": agent[1], "step": agent[2]} if agent else None,
                        "user_reply": trace.user if agent and agent[0] else None,
                    })
            if not step.emission.tool_calls:
                agent = (step.emission.text, trace.index, step.index)
    return found


def _case_lines(path: Path, case_id: str) -> list[dict[str, Any]]:
    """The rows of one case in a JSON-lines table (an action or score table)."""
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [row for row in rows if row["case_id"] == case_id]
