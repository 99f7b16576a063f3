"""The agent-user loop of τ²-bench, as a conversation coroutine (`steploop.Loop`).

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

from typing import Annotated, Any

from msgspec import Meta

from toolcalib.backends.base import InfrastructureError
from toolcalib.benchmarks import LoopSettings
from toolcalib.benchmarks.tau2.user import REFERENCE, LlmUser, User, is_stop
from toolcalib.records import Case, Message, Outcome, Step, ToolCall, Trajectory, TurnTrace
from toolcalib.steploop import ENDED_OUTCOME, Conversation, EnvironmentFactory, steps
from toolcalib.variants import Variant

GREETING = "Hi! How can I help you today?"
"""τ²'s first agent message, sent before the user speaks."""
AGENT_STOP = "###STOP###"


class Tau2Loop(LoopSettings, frozen=True, kw_only=True):
    """The `benchmarks.tau2` fields the loop reads: the simulated user and τ²'s limits."""

    user: str = REFERENCE
    """Who plays the user: `reference` (the deterministic reference user), or the name of a
    `models` entry (any backend; its answers go through the response store)."""
    user_params: dict[str, float | int | str] = {}
    """Generation parameters of the user's requests (τ²: temperature 0)."""
    max_steps: Annotated[int, Meta(ge=2)] = 200
    """Messages per episode (agent, user and tool results), as τ² counts them."""
    max_errors: Annotated[int, Meta(ge=1)] = 10
    """Tool errors per episode before it ends as `too_many_errors`."""

    def user_model(self) -> str | None:
        return None if self.user == REFERENCE else self.user


def conversation(case: Case, model: str, variant: Variant, environment: EnvironmentFactory,
                 params: dict[str, Any] | None, identity: dict[str, Any], *, user: User,
                 user_identity: dict[str, Any], max_steps: int,
                 max_errors: int) -> Conversation:
    """One task as a coroutine (see the module docstring); each agent turn is the shared step
    loop (`steploop.steps`)."""
    case = variant.adjust_case(case)
    session = environment(case)
    task = case.environment["task"]
    tools = list(case.tools)
    messages: list[Message] = [*variant.preamble(),
                               Message(role="system", content=session.system_prompt),
                               Message(role="assistant", content=GREETING)]
    turns: list[TurnTrace] = []
    outcome: Outcome = "completed"
    error: str | None = None
    termination: str | None = None
    count, errors = 1, 0

    def finish() -> Trajectory:
        return Trajectory(case_id=case.id, benchmark=case.benchmark, category=case.category,
                          model=model, model_identity=identity, variant=variant.name,
                          outcome=outcome, error=error, turns=turns, messages=messages,
                          termination=termination, user_identity=user_identity)

    def execute(call: ToolCall) -> str:
        nonlocal errors
        content: str
        failed: bool
        content, failed = session.execute(call)
        errors += failed
        return content

    def capped(done: list[Step]) -> bool:
        nonlocal termination
        if errors >= max_errors:
            termination = "too_many_errors"
        elif count + messages_of(done) >= max_steps:
            termination = "max_steps"
        return termination is not None

    while True:
        if isinstance(user, LlmUser):  # a backend plays the user
            said = user.read((yield user.reply(task, messages)))
        else:
            said = user.reply(task, messages)
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
        ran = yield from steps(case, len(turns), messages, tools, params, execute, capped,
                               stops=lambda emission: AGENT_STOP in emission.text)
        count += messages_of(ran.steps)
        if ran.ended in ENDED_OUTCOME:
            outcome, error = ENDED_OUTCOME[ran.ended], ran.error
            termination = termination or AGENT_ENDED[ran.ended]
        elif AGENT_STOP in ran.steps[-1].emission.text:
            termination = "agent_stop"
        turns.append(TurnTrace(index=len(turns), steps=ran.steps, ended=ran.ended, user=said))
        if termination is not None:
            return finish()
        if count >= max_steps:
            outcome, termination = "step_cap", "max_steps"
            return finish()


AGENT_ENDED = {"error": "agent_error", "context_overflow": "context_overflow"}
"""The termination of an agent turn ended by its backend's failure."""


def messages_of(done: list[Step]) -> int:
    """The messages τ² counts for a turn's steps: the agent's, and one for each step's tool
    results."""
    return sum(1 + bool(step.results) for step in done)
