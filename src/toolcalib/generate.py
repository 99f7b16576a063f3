"""The multi-turn loop, following BFCL's protocol, with steps batched across conversations.

Per turn: the turn's messages (and any newly visible tools) are added; the model is queried
step after step; each step's calls are executed and their results returned as tool messages;
a step with no call ends the turn. A turn with more than `max_steps` call steps ends the
case as `step_cap` (BFCL's force-quit; the benchmark plugin states its cap: `Scripted`).
Single-step cases (the irrelevance sets) get exactly one emission and nothing is executed. A
variant's probe runs at its seam (`probes`; `sri-gate` reads replies with the `gate` the
generate stage hands in). Infrastructure failures end the case as `error` /
`context_overflow`: counted, never scored.

The step loop of a turn (`steploop.steps`) is every benchmark's: this scripted loop runs it
per turn, τ²'s agent-user loop per agent turn. `run_cases` drives any loop's conversations,
many in flight, one batch of steps at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from toolcalib.backends.base import Answer, Backend, Request, recorded_identity
from toolcalib.benchmarks import Scripted
from toolcalib.probes import Decision, ProbeContext, call_probe, halt_probe
from toolcalib.records import (
    AsksUser,
    Case,
    Emission,
    Intervention,
    Message,
    Outcome,
    Step,
    ToolCall,
    Trajectory,
    TurnTrace,
)
from toolcalib.steploop import ENDED_OUTCOME, Conversation, EnvironmentFactory, Loop, steps
from toolcalib.variants import Variant, get_variant

SCRIPTED = Scripted()
"""The scripted loop as `run_cases` runs it where no loop is named."""


def conversation(case: Case, model: str, variant: Variant, environment: EnvironmentFactory,
                 params: dict[str, Any] | None = None, identity: dict[str, Any] | None = None,
                 *, scripted: Scripted, gate: AsksUser | None = None) -> Conversation:
    """One case as a coroutine: yields each step's request, receives the backend's answer
    (an Emission or an InfrastructureError), returns the finished trajectory. `scripted`: the
    benchmark's step cap and its own members of the tool docs; `gate`: how the `sri-gate`
    probe reads a halting reply."""
    case = variant.adjust_case(case)
    env = environment(case) if case.multi_step else None
    messages: list[Message] = variant.preamble()
    tools: list[dict[str, Any]] = list(case.tools)
    turns: list[TurnTrace] = []
    interventions: list[Intervention] = []
    context = ProbeContext()
    outcome: Outcome = "completed"
    error: str | None = None

    def execute(call: ToolCall) -> str:
        if env is None:  # `steps` executes no call of a single-step case
            raise RuntimeError(f"case {case.id!r} is single-step: it executes no call")
        result: str = env.execute(call)
        context.observed.append((call, result))
        return result

    def capped(done: list[Step]) -> bool:
        return sum(1 for step in done if not step.dropped) > scripted.max_steps

    for turn in case.turns:
        tools = tools + turn.tools_added
        messages.extend(turn.messages)
        context.requests.append("\n".join(m.content for m in turn.messages if m.role == "user"))
        context.visible = {doc["name"]: doc for doc in tools}
        probed: set[str] = set()

        def probe(emission: Emission, step: int, index: int = turn.index,
                  probed: set[str] = probed) -> Message | None:
            found = _probe(variant, case, emission, context, probed, gate)
            if found is None:
                return None
            decision, name = found
            interventions.append(Intervention(turn=index, step=step, probe=name,
                                              fired=decision.fired, reason=decision.reason))
            return decision.message if decision.fired else None

        ran = yield from steps(case, turn.index, messages, tools, params, execute, capped,
                               probe=probe, extras=scripted.extras)
        turns.append(TurnTrace(index=turn.index, steps=ran.steps, ended=ran.ended))
        if ran.ended in ENDED_OUTCOME:
            outcome, error = ENDED_OUTCOME[ran.ended], ran.error
            break
    return Trajectory(case_id=case.id, benchmark=case.benchmark, category=case.category,
                      model=model, model_identity=identity or {}, variant=variant.name,
                      outcome=outcome, error=error, turns=turns, messages=messages,
                      interventions=interventions)


def _probe(variant: Variant, case: Case, emission: Emission, context: ProbeContext,
           probed: set[str], gate: AsksUser | None) -> tuple[Decision, str] | None:
    """The variant's probe decision for this emission (each probe runs once per turn)."""
    if not case.multi_step:
        return None
    if not emission.tool_calls and variant.halt_probe and "halt" not in probed:
        probed.add("halt")
        return halt_probe(variant.halt_probe, emission, context, gate), variant.halt_probe
    if emission.tool_calls and variant.call_probe and "call" not in probed:
        decision = call_probe(emission.tool_calls, context)
        if decision.fired:
            probed.add("call")
        return decision, variant.call_probe
    return None


def run_cases(cases: Iterable[Case], backend: Backend, variant: Variant,
              environment: EnvironmentFactory, *, batch_size: int = 1,
              params: dict[str, Any] | None = None,
              on_done: Callable[[Trajectory], None] | None = None,
              loop: Loop | Scripted = SCRIPTED, user: Backend | None = None,
              gate: AsksUser | None = None) -> Iterator[Trajectory]:
    """Trajectories in case order, keeping up to `batch_size` conversations in flight and
    sending their pending steps to the backend together (a simulated user's turns to `user`).
    `loop`: a benchmark's own, or the facts of scripted turns (`conversation`, its `sri-gate`
    probe reading with `gate`)."""
    queue = iter(cases)
    start: Loop = partial(conversation, scripted=loop, gate=gate) \
        if isinstance(loop, Scripted) else loop
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
             loop: Loop | Scripted = SCRIPTED, gate: AsksUser | None = None) -> Trajectory:
    """One case on its own (no batching)."""
    return next(run_cases([case], backend, variant, environment, params=params, loop=loop,
                          gate=gate))


def replay(cases: list[Case], backend: Backend, environment: EnvironmentFactory,
           loop: Loop | Scripted) -> Iterator[Trajectory]:
    """`cases` through `loop` under `baseline` (the context a published run was recorded in),
    each step answered by `backend` from the record: what the import stage hands a benchmark
    (`Benchmark.import_run`)."""
    return run_cases(cases, backend, get_variant("baseline"), environment, loop=loop)
