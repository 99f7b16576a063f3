"""The multi-turn loop, following BFCL's protocol.

Per turn: the turn's messages (and any newly visible tools) are added; the model is queried
step after step; each step's calls are executed and their results returned as tool messages;
a step with no call ends the turn. A turn with more than MAX_STEPS_PER_TURN call steps ends the
whole case as `step_cap` (BFCL's force-quit: scored as a failure). Single-step cases (the
irrelevance sets) get exactly one emission and nothing is executed. Infrastructure failures
end the case as `error` / `context_overflow`, which are counted but never scored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolcalib.backends.base import Backend, ContextOverflow, InfrastructureError, Request
from toolcalib.benchmarks.bfcl_release import MAX_STEPS_PER_TURN
from toolcalib.records import Case, Message, Step, Trajectory, TurnTrace
from toolcalib.variants import Variant

EnvironmentFactory = Callable[[Case], Any]


def run_case(case: Case, backend: Backend, variant: Variant,
             environment: EnvironmentFactory, params: dict[str, Any] | None = None,
             max_steps: int = MAX_STEPS_PER_TURN) -> Trajectory:
    """Run one case end to end and return its full trajectory."""
    env = environment(case) if case.multi_step else None
    messages: list[Message] = variant.preamble()
    tools: list[dict[str, Any]] = list(case.tools)
    turns: list[TurnTrace] = []
    outcome, error = "completed", None
    for turn in case.turns:
        tools = tools + turn.tools_added
        messages.extend(turn.messages)
        steps: list[Step] = []
        ended = "no_call"
        while True:
            request = Request(messages=list(messages), tools=tools, case=case, turn=turn.index,
                              step=len(steps), params=params or {})
            try:
                emission = backend.generate(request)
            except ContextOverflow as exc:
                ended, outcome, error = "context_overflow", "context_overflow", str(exc)
                break
            except InfrastructureError as exc:
                ended, outcome, error = "error", "error", str(exc)
                break
            messages.append(Message(role="assistant", content=emission.text,
                                    tool_calls=emission.tool_calls))
            if not case.multi_step:
                steps.append(Step(index=len(steps), emission=emission))
                ended = "single_step"
                break
            if not emission.tool_calls:
                steps.append(Step(index=len(steps), emission=emission))
                break
            results = [env.execute(call) for call in emission.tool_calls]
            messages.extend(Message(role="tool", name=call.name, content=result)
                            for call, result in zip(emission.tool_calls, results, strict=True))
            steps.append(Step(index=len(steps), emission=emission, results=results))
            if len(steps) > max_steps:
                ended, outcome = "step_cap", "step_cap"
                break
        turns.append(TurnTrace(index=turn.index, steps=steps, ended=ended))
        if outcome != "completed":
            break
    return Trajectory(case_id=case.id, benchmark=case.benchmark, category=case.category,
                      model=backend.name, variant=variant.name, outcome=outcome, error=error,
                      turns=turns, messages=messages)
