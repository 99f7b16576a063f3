"""τ² trajectories for the scorer's equivalence test and bench, and τ²'s own evaluator on them.

`trajectories` builds, per task, the reference replay (every reference action called in order,
each tool result from τ²'s environment, then a closing assistant message carrying the
communicate_info strings), an empty episode and perturbed ones (a call dropped, an extra call,
two calls swapped, an argument altered or removed, an unknown tool, calls made in parallel,
the information left out or written with commas or another case, a premature end). Tool
results always come from replaying the perturbed calls on a fresh environment, so every
trajectory is one τ² could have recorded.

`Tau2Evaluator` runs τ²'s `evaluate_simulation` (evaluation type `all`) from the pinned wheel.
Its module imports τ²'s registry (every agent, user and domain: litellm) and its
natural-language judge (litellm): both are replaced by stand-ins while it imports (the
registry's only use here is `get_env_constructor`; the judge is not called by `all`). The
environment constructor repeats τ²'s `get_environment` with the database and policy read from
the wheel (τ²'s own reads its data folder, which lies inside the zip).
"""

from __future__ import annotations

import copy
import importlib
import json
import random
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from toolcalib.benchmarks.tau2.environment import Tau2Environment
from toolcalib.benchmarks.tau2.release import DOMAINS, Tau2Release
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


def perturbed(release: Tau2Release, domain: str, task: dict[str, Any], kind: str,
              rng: random.Random) -> Case:
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
        writes = Tau2Environment(release, domain).write_tools()
        steps = [s for s in steps if s[0][0].name not in writes]
    elif kind == "no_args" and calls:
        i = rng.randrange(len(steps))
        steps[i] = [(ToolCall(name=steps[i][0][0].name, arguments={}), "assistant")]
    elif kind == "max_steps":
        termination = rng.choice(["max_steps", "too_many_errors", "agent_error", "user_error"])
    elif kind == "user_call" and calls:
        i = rng.randrange(len(steps))
        steps[i] = [(steps[i][0][0], "user")]
    return Case(domain, task, kind, episode(release, domain, task, steps, closing), termination)


def trajectories(release: Tau2Release, per_task: int = 2, limit: int | None = None,
                 seed: int = 0, domains: tuple[str, ...] = DOMAINS) -> Iterator[Case]:
    """Per task: the reference replay, an empty episode, then `per_task` perturbations (kinds
    taken in turn across tasks). `limit`: the first tasks per domain."""
    rng = random.Random(seed)
    turn = 0
    for domain in domains:
        for task in release.tasks(domain)[:limit]:
            yield Case(domain, task, "reference",
                       episode(release, domain, task, [[c] for c in _calls(task)],
                               closing_text(task)))
            yield Case(domain, task, "empty",
                       [OPENING, Message(role="assistant", content="Goodbye.")], "user_stop")
            for _ in range(per_task):
                yield perturbed(release, domain, task, PERTURBATIONS[turn % len(PERTURBATIONS)],
                                rng)
                turn += 1


class Tau2Evaluator:
    """τ²'s own `evaluate_simulation` over toolcalib messages."""

    def __init__(self, release: Tau2Release):
        self.release = release
        release.import_tau2()
        self._evaluator = _import_evaluator(release)
        self._message = importlib.import_module("tau2.data_model.message")
        self._simulation = importlib.import_module("tau2.data_model.simulation")
        self._tasks = importlib.import_module("tau2.data_model.tasks")

    def reward_info(self, domain: str, task: dict[str, Any], messages: list[Message],
                    termination: str) -> Any:
        simulation = self._simulation.SimulationRun(
            id="toolcalib", task_id=str(task["id"]), start_time="", end_time="", duration=0.0,
            termination_reason=self._simulation.TerminationReason(termination),
            messages=self.tau2_messages(messages))
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


def _env_constructor(release: Tau2Release, domain: str) -> Any:
    """τ²'s `get_environment(db=None, solo_mode=False)`, the data read from the wheel."""
    package, db_class, tools_class = _CLASSES[domain]
    data_model = importlib.import_module(f"tau2.domains.{package}.data_model")
    tools = importlib.import_module(f"tau2.domains.{package}.tools")
    environment = importlib.import_module("tau2.environment.environment")
    db_bytes = release.db_bytes(domain)
    policy = release.policy(domain)

    def get_environment(solo_mode: bool = False) -> Any:
        if solo_mode:
            raise ValueError(f"{domain} domain does not support solo mode")
        db = getattr(data_model, db_class).model_validate(json.loads(db_bytes))  # DB.load
        return environment.Environment(domain_name=domain, policy=policy,
                                       tools=getattr(tools, tools_class)(db))

    return get_environment
