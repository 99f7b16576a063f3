"""The agent-user loop of τ²-bench, as a conversation coroutine (`generate.Loop`).

The agent sees τ²'s system prompt (its agent instruction and the domain policy) and the
task's tools; the episode opens with τ²'s greeting from the agent, then the user speaks. Each
agent turn is a run of steps: a step with calls executes them in τ²'s environment and returns
their results; a step without calls is a message to the user, who answers (or stops). The
episode ends on a user stop signal (`user_stop`), the agent's `###STOP###` (`agent_stop`: in
any message, as τ²'s orchestrator checks it before anything runs; a stop message's calls are
recorded, never executed, the step without results and its turn `no_call`), or a limit:
`max_steps` messages (τ² counts every agent, user and tool-result message) or `max_errors`
tool errors (`too_many_errors`): both model behaviour (outcome `step_cap`). A user simulator
that fails is an infrastructure outcome (`user_error`, outcome `error`), never the agent's.
Variant probes do not run here (their seams are BFCL's turns): `Tau2.variants` lists the
variants this loop applies.
"""

from __future__ import annotations

from typing import Any

from toolcalib.backends.base import ContextOverflow, InfrastructureError, Request
from toolcalib.benchmarks.tau2.user import is_stop
from toolcalib.execute.calls import param_order_from_docs
from toolcalib.execute.textcalls import decode_emission
from toolcalib.generate import Conversation, EnvironmentFactory
from toolcalib.records import Case, Message, Step, Trajectory, TurnTrace
from toolcalib.variants import Variant

GREETING = "Hi! How can I help you today?"
"""τ²'s first agent message, sent before the user speaks."""
AGENT_STOP = "###STOP###"


def conversation(case: Case, model: str, variant: Variant, environment: EnvironmentFactory,
                 params: dict[str, Any] | None, identity: dict[str, Any], *, user: Any,
                 user_identity: dict[str, Any], max_steps: int,
                 max_errors: int) -> Conversation:
    """One task as a coroutine (see the module docstring)."""
    case = variant.adjust_case(case)
    session = environment(case)
    task = case.environment["task"]
    tools = list(case.tools)
    order, visible = param_order_from_docs(tools), {doc["name"]: doc for doc in tools}
    messages: list[Message] = [*variant.preamble(),
                               Message(role="system", content=session.system_prompt),
                               Message(role="assistant", content=GREETING)]
    turns: list[TurnTrace] = []
    outcome, error, termination = "completed", None, None
    count, errors = 1, 0

    def finish() -> Trajectory:
        return Trajectory(case_id=case.id, benchmark=case.benchmark, category=case.category,
                          model=model, model_identity=identity, variant=variant.name,
                          outcome=outcome, error=error, turns=turns, messages=messages,
                          termination=termination, user_identity=user_identity)

    while True:
        said = user.reply(task, messages)
        if isinstance(said, Request):  # a backend plays the user
            said = user.read((yield said))
        if isinstance(said, InfrastructureError):
            outcome, error, termination = "error", f"user simulator: {said}", "user_error"
            return finish()
        messages.append(Message(role="user", content=said))
        count += 1
        if is_stop(said):
            termination = "user_stop"
            return finish()
        if count >= max_steps:
            outcome, termination = "step_cap", "max_steps"
            return finish()
        steps: list[Step] = []
        ended = "no_call"
        while True:
            answer = yield Request(messages=list(messages), tools=tools, case=case,
                                   turn=len(turns), step=len(steps), params=params or {})
            if isinstance(answer, ContextOverflow):
                ended = outcome = termination = "context_overflow"
                error = str(answer)
                break
            if isinstance(answer, InfrastructureError):
                ended, outcome, error, termination = "error", "error", str(answer), "agent_error"
                break
            emission = decode_emission(answer, order, visible)
            messages.append(Message(role="assistant", content=emission.text,
                                    tool_calls=emission.tool_calls))
            count += 1
            if AGENT_STOP in emission.text or not emission.tool_calls:
                steps.append(Step(index=len(steps), emission=emission))
                if AGENT_STOP in emission.text:
                    termination = "agent_stop"
                break
            results = []
            for call in emission.tool_calls:
                content, failed = session.execute(call)
                results.append(content)
                errors += failed
                messages.append(Message(role="tool", name=call.name, content=content))
            count += 1
            steps.append(Step(index=len(steps), emission=emission, results=results))
            if errors >= max_errors:
                ended, outcome, termination = "step_cap", "step_cap", "too_many_errors"
                break
            if count >= max_steps:
                ended, outcome, termination = "step_cap", "step_cap", "max_steps"
                break
        turns.append(TurnTrace(index=len(turns), steps=steps, ended=ended, user=said))
        if termination is not None:
            return finish()
        if count >= max_steps:
            outcome, termination = "step_cap", "max_steps"
            return finish()


