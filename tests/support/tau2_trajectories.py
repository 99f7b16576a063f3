"""τ² trajectories for the scorer's equivalence test and bench, and τ²'s own evaluator on them.

`plans` draws and `trajectories` builds, per task, the reference replay (every reference
action called in order, each tool result from τ²'s environment, then a closing assistant
message carrying the communicate_info strings), an empty episode and perturbed ones (a call
dropped, an extra call, two calls swapped, an argument altered or removed, an unknown tool,
calls made in parallel, the information left out or written with commas or another case, a
premature end). Tool results always come from replaying the perturbed calls on a fresh
environment, so every trajectory is one τ² could have recorded.

`Tau2Evaluator` runs τ²'s `evaluate_simulation` (evaluation type `all`) from the pinned wheel.
Its module imports τ²'s registry (every agent, user and domain: litellm) and its
natural-language judge (litellm): both are replaced by stand-ins while it imports (the
registry's only use here is `get_env_constructor`; the judge is not called by `all`). The
environment constructor repeats τ²'s `get_environment` with the database and policy read from
the wheel (τ²'s own reads its data folder, which lies inside the zip); each evaluator hands
its own to `evaluate_simulation` (the module's `registry`, set before each call).

`score_in_pool` replays the plans and scores each with our strict `Tau2Scorer` and τ²'s
evaluator in a pool of processes, a task's trajectories in one of them, and sends back plain
values for the caller to compare.
"""

from __future__ import annotations

import copy
import gc
import importlib
import itertools
import json
import multiprocessing
import os
import pickle
import random
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcalib.benchmarks.tau2.environment import Tau2Environment, write_tools
from toolcalib.benchmarks.tau2.release import DOMAINS, Tau2Release
from toolcalib.benchmarks.tau2.score import Tau2Score, Tau2Scorer
from toolcalib.records import Message, ToolCall

OPENING = Message(role="user", content="Hi, I need help with my account.")


@dataclass(frozen=True)
class Case:
    domain: str
    task: dict[str, Any]
    kind: str
    messages: list[Message]
    termination: str = "agent_stop"


def _calls(task: dict[str, Any]) -> list[tuple[ToolCall, str]]:
    return [(ToolCall(name=a["name"], arguments=copy.deepcopy(a["arguments"])),
             a.get("requestor") or "assistant")
            for a in task["evaluation_criteria"].get("actions") or []]


def episode(release: Tau2Release, domain: str, task: dict[str, Any],
            steps: list[list[tuple[ToolCall, str]]], closing: str) -> list[Message]:
    """The messages of an episode: each step's calls in one message of its requestor, each
    answered by the environment's tool message, then the closing assistant text."""
    env = Tau2Environment(release, domain, task)
    messages = [Message(role="system", content="policy"), OPENING]
    for step in steps:
        if not step:
            continue
        role = step[0][1]
        messages.append(Message(role=role, content="", tool_calls=[c for c, _ in step]))
        for call, requestor in step:
            content, _ = env.execute(call, requestor)
            messages.append(Message(role="tool", name=call.name, content=content))
    messages.append(Message(role="assistant", content=closing))
    return messages


def closing_text(task: dict[str, Any], how: str = "plain") -> str:
    info = task["evaluation_criteria"].get("communicate_info") or []
    if how == "absent" or not info:
        return "Is there anything else I can help you with?"
    if how == "commas":  # τ² removes the message's commas: "1,286" still says 1286
        info = [f"{s[:1]},{s[1:]}" if len(s) > 1 else s for s in info]
    if how == "upper":
        info = [s.upper() for s in info]
    if how == "partial":
        info = info[:-1] + [info[-1][:-1]]
    return "Done. Summary: " + "; ".join(info) + "."


def _alter(call: ToolCall, rng: random.Random) -> ToolCall:
    arguments = copy.deepcopy(call.arguments)
    if not arguments:
        return ToolCall(name=call.name, arguments={"unexpected": 1})
    key = rng.choice(sorted(arguments))
    value = arguments[key]
    if isinstance(value, bool):
        arguments[key] = not value
    elif isinstance(value, int | float):
        arguments[key] = value + 1
    elif isinstance(value, str):
        arguments[key] = value + "X"
    elif isinstance(value, list) and value:
        arguments[key] = value[:-1]
    else:
        del arguments[key]
    return ToolCall(name=call.name, arguments=arguments)


PERTURBATIONS = ("drop", "extra", "swap", "alter", "remove_arg", "unknown_tool", "parallel",
                 "communicate_absent", "communicate_commas", "communicate_upper",
                 "communicate_partial", "drop_writes", "no_args", "max_steps", "user_call")


@dataclass(frozen=True)
class Plan:
    """A trajectory before it is replayed: the calls of each step, the closing text, the end."""
    domain: str
    task: dict[str, Any]
    kind: str
    steps: list[list[tuple[ToolCall, str]]]
    closing: str
    termination: str = "agent_stop"

    def case(self, release: Tau2Release) -> Case:
        """The episode (tool results from a fresh environment); the empty one has none."""
        if self.kind == "empty":
            messages = [OPENING, Message(role="assistant", content=self.closing)]
        else:
            messages = episode(release, self.domain, self.task, self.steps, self.closing)
        return Case(self.domain, self.task, self.kind, messages, self.termination)


def perturbed(release: Tau2Release, domain: str, task: dict[str, Any], kind: str,
              rng: random.Random) -> Plan:
    calls = _calls(task)
    steps = [[c] for c in calls]
    closing = closing_text(task)
    termination = "agent_stop"
    if kind == "drop" and calls:
        del steps[rng.randrange(len(steps))]
    elif kind == "extra":
        extra = rng.choice(calls) if calls else (ToolCall(name="calculate",
                                                         arguments={"expression": "1+1"}),
                                                "assistant")
        steps.insert(rng.randrange(len(steps) + 1), [extra])
    elif kind == "swap" and len(steps) > 1:
        i = rng.randrange(len(steps) - 1)
        steps[i], steps[i + 1] = steps[i + 1], steps[i]
    elif kind == "alter" and calls:
        i = rng.randrange(len(steps))
        steps[i] = [(_alter(steps[i][0][0], rng), "assistant")]
    elif kind == "remove_arg" and calls:
        i = rng.randrange(len(steps))
        call = steps[i][0][0]
        arguments = dict(call.arguments)
        if arguments:
            del arguments[rng.choice(sorted(arguments))]
        steps[i] = [(ToolCall(name=call.name, arguments=arguments), "assistant")]
    elif kind == "unknown_tool":
        steps.insert(0, [(ToolCall(name="delete_everything", arguments={"id": "x"}),
                          "assistant")])
    elif kind == "parallel":
        steps = [[c for c in calls]] if calls else []
    elif kind.startswith("communicate_"):
        closing = closing_text(task, kind.removeprefix("communicate_"))
    elif kind == "drop_writes":
        writes = write_tools(release, domain)
        steps = [s for s in steps if s[0][0].name not in writes]
    elif kind == "no_args" and calls:
        i = rng.randrange(len(steps))
        steps[i] = [(ToolCall(name=steps[i][0][0].name, arguments={}), "assistant")]
    elif kind == "max_steps":
        termination = rng.choice(["max_steps", "too_many_errors", "agent_error", "user_error"])
    elif kind == "user_call" and calls:
        i = rng.randrange(len(steps))
        steps[i] = [(steps[i][0][0], "user")]
    return Plan(domain, task, kind, steps, closing, termination)


def plans(release: Tau2Release, per_task: int = 2, limit: int | None = None,
          seed: int = 0, domains: tuple[str, ...] = DOMAINS) -> Iterator[Plan]:
    """Per task: the reference replay, an empty episode, then `per_task` perturbations (kinds
    taken in turn across tasks). `limit`: the first tasks per domain. No environment is
    built: `Plan.case` replays one."""
    rng = random.Random(seed)
    turn = 0
    for domain in domains:
        for task in release.tasks(domain)[:limit]:
            yield Plan(domain, task, "reference", [[c] for c in _calls(task)],
                       closing_text(task))
            yield Plan(domain, task, "empty", [], "Goodbye.", "user_stop")
            for _ in range(per_task):
                yield perturbed(release, domain, task, PERTURBATIONS[turn % len(PERTURBATIONS)],
                                rng)
                turn += 1


def trajectories(release: Tau2Release, per_task: int = 2, limit: int | None = None,
                 seed: int = 0, domains: tuple[str, ...] = DOMAINS) -> Iterator[Case]:
    """The episodes of `plans`, each replayed as it is reached."""
    return (plan.case(release) for plan in plans(release, per_task, limit, seed, domains))


class Tau2Evaluator:
    """τ²'s own `evaluate_simulation` over toolcalib messages.

    `parse_once`: the environment constructor τ²'s evaluator calls (twice per trajectory)
    builds the database model from a pickle of the one parsed when the domain is first asked
    for, not by parsing db.json again (`_parsed_once`: the same model, faster); without it,
    each call reads and parses the file as τ²'s `get_environment` does (the bench times
    that)."""

    def __init__(self, release: Tau2Release, parse_once: bool = False):
        self.release = release
        self.parse_once = parse_once
        release.import_tau2()
        self._evaluator = _import_evaluator(release)
        self._message = importlib.import_module("tau2.data_model.message")
        self._simulation = importlib.import_module("tau2.data_model.simulation")
        self._tasks = importlib.import_module("tau2.data_model.tasks")
        self._registry = types.SimpleNamespace(get_env_constructor=self.env_constructor)
        self._constructors: dict[str, Any] = {}

    def env_constructor(self, domain: str) -> Any:
        """What τ²'s `registry.get_env_constructor(domain)` returns to its evaluator."""
        if not self.parse_once:
            return _env_constructor(self.release, domain)
        if domain not in self._constructors:
            self._constructors[domain] = _env_constructor(self.release, domain, parse_once=True)
        return self._constructors[domain]

    def reward_info(self, domain: str, task: dict[str, Any], messages: list[Message],
                    termination: str) -> Any:
        simulation = self._simulation.SimulationRun(
            id="toolcalib", task_id=str(task["id"]), start_time="", end_time="", duration=0.0,
            termination_reason=self._simulation.TerminationReason(termination),
            messages=self.tau2_messages(messages))
        self._evaluator.registry = self._registry  # the global evaluate_simulation reads
        return self._evaluator.evaluate_simulation(
            simulation=simulation, task=self._tasks.Task.model_validate(task),
            evaluation_type=self._evaluator.EvaluationType.ALL, solo_mode=False, domain=domain)

    def tau2_messages(self, messages: list[Message]) -> list[Any]:
        """τ²'s message objects; calls get ids in order, each tool message the next pending
        call's id and requestor (so τ² pairs them as our scorer does)."""
        m = self._message
        pending: list[tuple[str, str]] = []
        out: list[Any] = []
        for number, message in enumerate(messages):
            content = message.content or None
            if message.role == "system":
                out.append(m.SystemMessage(role="system", content=content))
            elif message.role == "tool":
                call_id, requestor = pending.pop(0) if pending else ("orphan", "assistant")
                out.append(m.ToolMessage(id=call_id, role="tool", content=message.content,
                                         requestor=requestor,
                                         error=message.content.startswith("Error:")))
            else:
                calls = [m.ToolCall(id=f"call_{number}_{k}", name=c.name,
                                    arguments=copy.deepcopy(c.arguments),
                                    requestor=message.role)
                         for k, c in enumerate(message.tool_calls)]
                pending.extend((c.id, message.role) for c in calls)
                model = m.UserMessage if message.role == "user" else m.AssistantMessage
                out.append(model(role=message.role, content=content, tool_calls=calls or None))
        return out


@dataclass(frozen=True)
class Tau2Checks:
    """What τ²'s `RewardInfo` reports, as plain values (a worker process sends them back)."""
    reward: float
    db_match: bool | None
    """None: no database check (`db_check` is None: a premature end, no criteria)."""
    communicate_met: list[bool]
    actions_matched: list[bool] | None
    info: str

    @classmethod
    def of(cls, info: Any) -> Tau2Checks:
        return cls(info.reward, None if info.db_check is None else info.db_check.db_match,
                   [c.met for c in info.communicate_checks or []],
                   None if info.action_checks is None
                   else [c.action_match for c in info.action_checks],
                   str(info.info))


@dataclass(frozen=True)
class Outcome:
    """One trajectory scored by both: our score, τ²'s checks, the seconds each took."""
    ours: Tau2Score
    tau2: Tau2Checks
    ours_s: float
    tau2_s: float


class BothScorers:
    """Our strict `Tau2Scorer` (one per domain, its per-task cache filled as it goes) and
    τ²'s evaluator, on the same cases in this process."""

    def __init__(self, release: Tau2Release, evaluator: Tau2Evaluator):
        self.release = release
        self.evaluator = evaluator
        self._scorers: dict[str, Tau2Scorer] = {}

    def score(self, case: Case) -> Outcome:
        scorer = self._scorers.setdefault(case.domain, Tau2Scorer(self.release, case.domain))
        start = time.perf_counter()
        ours = scorer.score(case.task, case.messages, case.termination)
        middle = time.perf_counter()
        info = self.evaluator.reward_info(case.domain, case.task, case.messages,
                                          case.termination)
        return Outcome(ours, Tau2Checks.of(info), middle - start, time.perf_counter() - middle)


_WORKER: list[BothScorers] = []
"""A pool worker's scorers (set once by `_start_worker`)."""


def _start_worker(wheel: Path) -> None:
    """A pool worker's setup. Its automatic garbage collection is off (`_score_plans`
    collects after each chunk): every environment holds some 10^5 objects (a database
    model), so a build or hash triggered full collections that took half the worker's CPU
    time; what they free (a few dozen objects per trajectory: environments are freed by
    reference counting) and what τ² or our scorer compute do not depend on when they run."""
    gc.disable()
    release = Tau2Release(wheel)
    _WORKER.append(BothScorers(release, Tau2Evaluator(release, parse_once=True)))
    gc.collect()
    gc.freeze()  # what is set up now is not traversed again


def _score_plans(chunk: list[Plan]) -> list[Outcome]:
    both = _WORKER[0]
    outcomes = [both.score(plan.case(both.release)) for plan in chunk]
    gc.collect()
    return outcomes


def score_in_pool(release: Tau2Release, cases: Iterable[Plan], workers: int | None = None
                  ) -> list[tuple[Plan, Outcome]]:
    """Each plan replayed and scored by both in a pool of `workers` processes (default: one
    per CPU), in the plans' order. A task's plans go to one worker (its scorer's cache
    serves them); each worker imports τ² once (spawned: nothing inherited from this
    process), uses `Tau2Evaluator(parse_once=True)` and collects garbage after each task
    (`_start_worker`)."""
    chunks = [list(group) for _, group in
              itertools.groupby(cases, key=lambda plan: (plan.domain, plan.task["id"]))]
    workers = max(1, min(workers or os.cpu_count() or 1, len(chunks)))
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(release.wheel,))
    try:
        scored = zip(chunks, pool.map(_score_plans, chunks), strict=True)
        return [pair for chunk, outcomes in scored for pair in zip(chunk, outcomes, strict=True)]
    finally:
        pool.shutdown(cancel_futures=True)  # after a failure: the chunks not started


def _import_evaluator(release: Tau2Release) -> Any:
    if "tau2.evaluator.evaluator" in sys.modules:
        return sys.modules["tau2.evaluator.evaluator"]
    registry = types.ModuleType("tau2.registry")
    registry.registry = types.SimpleNamespace(
        get_env_constructor=lambda domain: _env_constructor(release, domain))
    judge = types.ModuleType("tau2.utils.llm_utils")

    def generate(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("τ²'s natural-language judge is not part of this test")

    judge.generate = generate
    stand_ins = {"tau2.registry": registry, "tau2.utils.llm_utils": judge}
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module("tau2.evaluator.evaluator")
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


_CLASSES = {"airline": ("airline", "FlightDB", "AirlineTools"),
            "retail": ("retail", "RetailDB", "RetailTools")}


def _env_constructor(release: Tau2Release, domain: str, parse_once: bool = False) -> Any:
    """τ²'s `get_environment(db=None, solo_mode=False)`, the data read from the wheel."""
    package, db_class, tools_class = _CLASSES[domain]
    data_model = importlib.import_module(f"tau2.domains.{package}.data_model")
    tools = importlib.import_module(f"tau2.domains.{package}.tools")
    environment = importlib.import_module("tau2.environment.environment")
    db_bytes = release.db_bytes(domain)
    policy = release.policy(domain)

    def load() -> Any:  # τ²'s DB.load
        return getattr(data_model, db_class).model_validate(json.loads(db_bytes))

    new_db = _parsed_once(load) if parse_once else load

    def get_environment(solo_mode: bool = False) -> Any:
        if solo_mode:
            raise ValueError(f"{domain} domain does not support solo mode")
        return environment.Environment(domain_name=domain, policy=policy,
                                       tools=getattr(tools, tools_class)(new_db()))

    return get_environment


def _parsed_once(load: Callable[[], Any]) -> Callable[[], Any]:
    """`load`'s model, rebuilt on every call from a pickle of one `load()`.

    The same model as a fresh `load()`: unpickling a pydantic model restores each model's
    class, field values (`__dict__`), fields set, extra and private attributes exactly, and
    runs no validator (τ²'s database models have none, nor private attributes, so `load` is
    a pure function of db.json); every call unpickles the same immutable bytes, so no
    environment shares an object with another (τ²'s tools change the database in place).
    Checked here on one copy: equal to a second `load()`, with τ²'s hash of it.

    CPU seconds to parse and validate, then to unpickle (2-core machine, median of 5, with
    automatic garbage collection off as in a pool worker): airline (7 MB) 0.205 and 0.131,
    retail (2.8 MB) 0.073 and 0.063; with it on, 0.55 and 0.22, 0.13 and 0.08 (wall)."""
    blob = pickle.dumps(load(), protocol=pickle.HIGHEST_PROTOCOL)
    copied, fresh = pickle.loads(blob), load()
    if copied != fresh or copied.get_hash() != fresh.get_hash():
        raise AssertionError(f"a pickled copy of {type(fresh).__name__} differs from a fresh one")
    return lambda: pickle.loads(blob)
