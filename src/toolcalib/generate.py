"""The multi-turn loop, following BFCL's protocol, with steps batched across conversations.

Per turn: the turn's messages (and any newly visible tools) are added; the model is queried
step after step; each step's calls are executed and their results returned as tool messages;
a step with no call ends the turn. A turn with more than `max_steps` call steps ends the
case as `step_cap` (BFCL's force-quit; the benchmark plugin passes its cap). Single-step cases
(the irrelevance sets) get exactly one emission and nothing is executed. Infrastructure
failures end the case as `error` / `context_overflow`: counted, never scored.

The step loop of a turn (`steps`) is every benchmark's: this scripted loop runs it per
turn, τ²'s agent-user loop per agent turn.

Each case is a generator that yields its next `Request` and receives the answer, so a driver
can keep many conversations in flight and hand the backend one batch of steps at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, NamedTuple, Protocol

from toolcalib.backends.base import (
    Answer,
    Backend,
    ContextOverflow,
    InfrastructureError,
    Request,
    recorded_identity,
)
from toolcalib.execute.calls import param_order_from_docs
from toolcalib.execute.textcalls import decode_emission
from toolcalib.probes import Decision, ProbeContext, call_probe, halt_probe
from toolcalib.records import (
    Case,
    Emission,
    Intervention,
    Message,
    Outcome,
    Step,
    ToolCall,
    Trajectory,
    TurnEnd,
    TurnTrace,
)
from toolcalib.variants import Variant

EnvironmentFactory = Callable[[Case], Any]
Conversation = Generator[Request, Answer, Trajectory]
MAX_STEPS = 20
"""The scripted loop's default call steps per turn (BFCL's force-quit)."""


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


def conversation(case: Case, model: str, variant: Variant, environment: EnvironmentFactory,
                 params: dict[str, Any] | None = None, max_steps: int = MAX_STEPS,
                 identity: dict[str, Any] | None = None,
                 extras: tuple[str, ...] = ()) -> Conversation:
    """One case as a coroutine: yields each step's request, receives the backend's answer
    (an Emission or an InfrastructureError), returns the finished trajectory. `extras`: the
    benchmark's own members of the tool docs (`Request.extras`)."""
    case = variant.adjust_case(case)
    env = environment(case) if case.multi_step else None
    messages: list[Message] = variant.preamble()
    tools: list[dict[str, Any]] = list(case.tools)
    turns: list[TurnTrace] = []
    interventions: list[Intervention] = []
    context = ProbeContext()
    outcome, error = "completed", None

    def execute(call: ToolCall) -> str:
        result: str = env.execute(call)
        context.observed.append((call, result))
        return result

    def capped(done: list[Step]) -> bool:
        return sum(1 for step in done if not step.dropped) > max_steps

    for turn in case.turns:
        tools = tools + turn.tools_added
        messages.extend(turn.messages)
        context.requests.append("\n".join(m.content for m in turn.messages if m.role == "user"))
        context.visible = {doc["name"]: doc for doc in tools}
        probed: set[str] = set()

        def probe(emission: Emission, step: int, index: int = turn.index,
                  probed: set[str] = probed) -> Message | None:
            found = _probe(variant, case, emission, context, probed)
            if found is None:
                return None
            decision, name = found
            interventions.append(Intervention(turn=index, step=step, probe=name,
                                              fired=decision.fired, reason=decision.reason))
            return decision.message if decision.fired else None

        ran = yield from steps(case, turn.index, messages, tools, params, execute, capped,
                               probe=probe, extras=extras)
        turns.append(TurnTrace(index=turn.index, steps=ran.steps, ended=ran.ended))
        if ran.ended in ENDED_OUTCOME:
            outcome, error = ENDED_OUTCOME[ran.ended], ran.error
            break
    return Trajectory(case_id=case.id, benchmark=case.benchmark, category=case.category,
                      model=model, model_identity=identity or {}, variant=variant.name,
                      outcome=outcome, error=error, turns=turns, messages=messages,
                      interventions=interventions)


def _probe(variant: Variant, case: Case, emission: Emission, context: ProbeContext,
           probed: set[str]) -> tuple[Decision, str] | None:
    """The variant's probe decision for this emission (each probe runs once per turn)."""
    if not case.multi_step:
        return None
    if not emission.tool_calls and variant.halt_probe and "halt" not in probed:
        probed.add("halt")
        return halt_probe(variant.halt_probe, emission, context), variant.halt_probe
    if emission.tool_calls and variant.call_probe and "call" not in probed:
        decision = call_probe(emission.tool_calls, context)
        if decision.fired:
            probed.add("call")
        return decision, variant.call_probe
    return None


class Loop(Protocol):
    """Builds one case's conversation: the scripted loop (`conversation`) or a benchmark's own
    (a simulated user's), which asks the `user` role's backend through `Request.role`."""

    def __call__(self, case: Case, model: str, variant: Variant,
                 environment: EnvironmentFactory, params: dict[str, Any] | None,
                 identity: dict[str, Any]) -> Conversation: ...


def run_cases(cases: Iterable[Case], backend: Backend, variant: Variant,
              environment: EnvironmentFactory, *, batch_size: int = 1,
              params: dict[str, Any] | None = None,
              on_done: Callable[[Trajectory], None] | None = None,
              loop: Loop | None = None, user: Backend | None = None) -> Iterator[Trajectory]:
    """Trajectories in case order, keeping up to `batch_size` conversations in flight and
    sending their pending steps to the backend together (a simulated user's turns to `user`)."""
    queue = iter(cases)
    start = loop or conversation
    active: dict[int, tuple[Conversation, Request]] = {}
    finished: dict[int, Trajectory] = {}
    next_index = emitted = 0
    identity = recorded_identity(backend.identity())
    while True:
        while len(active) < batch_size:
            case = next(queue, None)
            if case is None:
                break
            chat = start(case, backend.name, variant, environment, params, identity=identity)
            active[next_index] = (chat, next(chat))
            next_index += 1
        if not active:
            return
        answers = _answer(active, backend, user)
        for index in sorted(active):
            chat = active[index][0]
            try:
                active[index] = (chat, chat.send(answers[index]))
            except StopIteration as done:
                del active[index]
                finished[index] = done.value
                if on_done is not None:
                    on_done(done.value)
        while emitted in finished:
            yield finished.pop(emitted)
            emitted += 1


def _answer(active: dict[int, tuple[Conversation, Request]], backend: Backend,
            user: Backend | None) -> dict[int, Answer]:
    """Every pending request's answer: the agent's in one batch, the simulated user's in
    another."""
    answers: dict[int, Answer] = {}
    for role, answerer in (("agent", backend), ("user", user)):
        order = [i for i in sorted(active) if active[i][1].role == role]
        if not order:
            continue
        if answerer is None:
            raise ValueError(f"a conversation asks the '{role}' role, and no backend plays it")
        batch = answerer.generate_batch([active[i][1] for i in order])
        answers.update(zip(order, batch, strict=True))
    return answers


def run_case(case: Case, backend: Backend, variant: Variant,
             environment: EnvironmentFactory, params: dict[str, Any] | None = None,
             loop: Loop | None = None) -> Trajectory:
    """One case on its own (no batching)."""
    return next(run_cases([case], backend, variant, environment, params=params, loop=loop))
