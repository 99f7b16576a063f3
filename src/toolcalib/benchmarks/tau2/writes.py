"""`confirm` gold per write call: every call to a tool τ² marks as a write needs, before it, an
agent message that states the action and a user reply that explicitly approves it.

Each write call of a trajectory is a unit of the per-case table with gold `confirm`: id
`<case id>#write<k>` (k counts the trajectory's write calls from 1), emitted
`confirm|tool_call` when the rule-based verdict (`classify.confirm.confirm_verdict`) confirms
it, else `tool_call`; its verdict (`passed`) is the trajectory's reward. So `confirm` rows
count writes, not tasks, and weigh each write equally (a task with three writes counts
three times); TER on them is 1 by construction (every unit is a call).

The message before a write is the agent's last message to the user before the write's step
(the last step of an earlier turn); the user's reply is the message that opened the write's
turn (`TurnTrace.user`). A write in the first turn has no agent message before it.
"""

from __future__ import annotations

from typing import Any

from toolcalib.classify.confirm import confirm_verdict
from toolcalib.metrics.rows import ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC
from toolcalib.records import MODEL_OUTCOMES


def write_units(case: Any, trajectory: Any, score: Any) -> list[dict[str, Any]]:
    """The per-case rows (`metrics.rows.CASE_COLUMNS`) of every write call of a trajectory."""
    writes = set(case.environment.get("write_tools") or ())
    scored = trajectory.outcome in MODEL_OUTCOMES and bool(score.scored)
    rows: list[dict[str, Any]] = []
    agent_text: str | None = None
    for trace in trajectory.turns:
        user_reply = getattr(trace, "user", None)
        for step in trace.steps:
            if getattr(step, "dropped", False):
                continue
            emission = step.emission
            for call in emission.tool_calls:
                if call.name not in writes:
                    continue
                verdict = confirm_verdict(agent_text, user_reply if agent_text else None, call)
                rows.append(_unit(case, trajectory, score, trace.index, len(rows) + 1,
                                  verdict.confirmed, scored))
            if not emission.tool_calls:
                agent_text = emission.text
    return rows


def _unit(case: Any, trajectory: Any, score: Any, turn: int, number: int, confirmed: bool,
          scored: bool) -> dict[str, Any]:
    classes = "confirm|tool_call" if confirmed else "tool_call"
    passed = score.passed
    bound = None
    if scored and passed and not confirmed:
        bound = ACC_WITHOUT_GOLD
    elif scored and not passed and confirmed:
        bound = GOLD_WITHOUT_ACC
    return {  # CASE_COLUMNS
        "model": trajectory.model, "variant": trajectory.variant, "benchmark": case.benchmark,
        "category": case.category, "case_id": f"{case.id}#write{number}",
        "gold_action": "confirm", "gold_turn": turn, "gold_turn_gold": "confirm",
        "emitted": classes, "gold_emitted": confirmed,
        "gold_turn_class": "confirm" if confirmed else "tool_call", "gold_turn_hit": confirmed,
        "tool_call_emitted": True, "gold_turn_tool_call": True, "emission_classes": classes,
        "gold_emitted_any_step": confirmed, "passed": passed, "scored": scored,
        "outcome": trajectory.outcome, "error_type": score.error_type, "bound": bound,
        "probes_fired": 0, "unclosed_reasoning_turns": 0,
    }
