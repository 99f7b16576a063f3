"""The step loop of one turn (`steps`), which every benchmark's loop runs, and the types a loop
is built of (`Loop`, `Conversation`): the scripted loop (`generate.conversation`) runs it per
turn, τ²'s agent-user loop per agent turn. It imports no benchmark and no classifier.

A conversation is a generator that yields its next `Request` and receives the answer, so a
driver (`generate.run_cases`) can keep many in flight and hand the backend one batch of steps
at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from toolcalib.backends.base import Answer, ContextOverflow, InfrastructureError, Request
from toolcalib.execute.calls import param_order_from_docs
from toolcalib.execute.textcalls import decode_emission
from toolcalib.records import Case, Emission, Message, Outcome, Step, ToolCall, Trajectory

if TYPE_CHECKING:
    from toolcalib.records import TurnEnd
    from toolcalib.variants import Variant

EnvironmentFactory = Callable[[Case], Any]
Conversation = Generator[Request, Answer, Trajectory]


class TurnSteps(NamedTuple):
    """What one turn's steps came to (`steps`)."""

    steps: list[Step]
    ended: TurnEnd
    error: str | None = None
    """The infrastructure failure that ended it (`ended` `error` / `context_overflow`)."""


ENDED_OUTCOME: dict[str, Outcome] = {"step_cap": "step_cap", "error": "error",
                                     "context_overflow": "context_overflow"}
"""The trajectory outcome a turn's end makes (any other end: the conversation goes on)."""


def steps(case: Case, turn: int, messages: list[Message], tools: list[dict[str, Any]],
          params: dict[str, Any] | None, execute: Callable[[ToolCall], str],
          capped: Callable[[list[Step]], bool], *,
          probe: Callable[[Emission, int], Message | None] | None = None,
          stops: Callable[[Emission], bool] | None = None,
          extras: tuple[str, ...] = ()) -> Generator[Request, Answer, TurnSteps]:
    """The step loop of one turn, which every benchmark's loop runs (it extends `messages`):
    query the model; a failed request ends the turn (`error` / `context_overflow`); a `probe`
    that answers with a message withdraws the emission (a dropped step) and the model is asked
    again; a single-step case's emission ends it (`single_step`); an emission without calls, or
    one that `stops` the conversation, ends it (`no_call`: its calls never run); else each call
    is `execute`d, its result returned as a tool message, and the turn ends as `step_cap` once
    its steps are `capped`. `extras`: the benchmark's own members of the tool docs
    (`Request.extras`)."""
    order, visible = param_order_from_docs(tools), {doc["name"]: doc for doc in tools}
    done: list[Step] = []
    while True:
        answer = yield Request(messages=list(messages), tools=tools, case=case, turn=turn,
                               step=len(done), params=params or {}, extras=extras)
        if isinstance(answer, ContextOverflow):
            return TurnSteps(done, "context_overflow", str(answer))
        if isinstance(answer, InfrastructureError):
            return TurnSteps(done, "error", str(answer))
        emission = decode_emission(answer, order, visible)
        withdrawn = None if probe is None else probe(emission, len(done))
        if withdrawn is not None:
            done.append(Step(index=len(done), emission=emission, dropped=True))
            messages.append(withdrawn)
            continue
        messages.append(Message(role="assistant", content=emission.text,
                                tool_calls=emission.tool_calls))
        if not case.multi_step:
            done.append(Step(index=len(done), emission=emission))
            return TurnSteps(done, "single_step")
        if not emission.tool_calls or (stops is not None and stops(emission)):
            done.append(Step(index=len(done), emission=emission))
            return TurnSteps(done, "no_call")
        results = [execute(call) for call in emission.tool_calls]
        messages.extend(Message(role="tool", name=call.name, content=result)
                        for call, result in zip(emission.tool_calls, results, strict=True))
        done.append(Step(index=len(done), emission=emission, results=results))
        if capped(done):
            return TurnSteps(done, "step_cap")


class Loop(Protocol):
    """Builds one case's conversation: the scripted loop (`generate.conversation`) or a
    benchmark's own (a simulated user's), which asks the `user` role's backend through
    `Request.role`."""

    def __call__(self, case: Case, model: str, variant: Variant,
                 environment: EnvironmentFactory, params: dict[str, Any] | None,
                 identity: dict[str, Any]) -> Conversation: ...
