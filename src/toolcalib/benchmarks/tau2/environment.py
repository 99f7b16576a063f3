"""A fresh τ² environment per task, built from τ²'s own classes and the verified release's data.

`Tau2Environment(release, domain, task)` does what τ²'s `get_environment` does (the domain's
toolkit over its database model, inside τ²'s `Environment`, with the domain policy) with the
database and policy read from the verified wheel (τ²'s own loader reads its `DATA_DIR`, which
points into the zip), then applies the task's `initial_state` with τ²'s `Environment.set_state`
as τ²'s orchestrator and evaluator do. Tool calls go through τ²'s `Environment.get_response`:
the content and error flag are τ²'s, whatever the call (an unknown tool, arguments the tool
does not take: τ²'s `Error: ...` message, never an exception).
"""

from __future__ import annotations

import copy
import gc
import importlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, cached_property
from typing import Any, Literal

from toolcalib.benchmarks.tau2.release import Tau2Release, check_domain
from toolcalib.records import ToolCall

Requestor = Literal["assistant", "user"]
"""Whose call a tool call is (τ²'s `ToolCall.requestor`)."""
DOMAIN_CLASSES: dict[str, tuple[str, str, str, str]] = {
    "airline": ("tau2.domains.airline.data_model", "FlightDB",
                "tau2.domains.airline.tools", "AirlineTools"),
    "retail": ("tau2.domains.retail.data_model", "RetailDB",
               "tau2.domains.retail.tools", "RetailTools"),
}
"""Domain -> (database model module, class, toolkit module, class), as in τ²'s
`tau2/domains/<domain>/environment.py`."""


def tau2_module(release: Tau2Release, name: str) -> Any:
    release.import_tau2()
    return importlib.import_module(name)


def task_as_read(release: Tau2Release, task: dict[str, Any]) -> dict[str, Any]:
    """A task as τ²'s `Task` model reads it (absent fields at their defaults): two tasks τ²
    cannot tell apart give equal dicts, whichever optional fields their files write out."""
    return dict(_task_model(release, task).model_dump(mode="json"))


class Tau2Environment:
    """One τ² environment: the domain's database after the task's initial state.

    Copy on write: the environments of one (release, domain, initial state) share a pristine τ²
    environment until one of them runs a write tool (τ²'s read, think and generic tools of
    airline and retail change no database), which first gives it its own copy; until then its
    hash is the pristine one's, computed once. Parsing the airline database (0.2 s) and hashing
    it (0.16 s) per task were most of a τ² job's time (bench/tau2_environments.py)."""

    def __init__(self, release: Tau2Release, domain: str, task: dict[str, Any] | None = None):
        self.release = release
        self.domain = check_domain(domain)
        state = None if task is None else _task_model(release, task).initial_state
        key = json.dumps(None if task is None else task.get("initial_state"), sort_keys=True)
        self._pristine = _pristine(release, self.domain, key, state)
        self._own: Any = None
        """τ²'s environment with this one's own database, from its first write on."""

    @property
    def tau2_environment(self) -> Any:
        """τ²'s own `Environment` object, with this environment's own database (code that
        drives τ² directly may write)."""
        return self._environment(None)

    def tools(self) -> list[dict[str, Any]]:
        """The agent's tools as τ²'s agent offers them (each `Tool.openai_schema`'s function:
        `name`, `description`, `parameters` as a JSON schema), in τ²'s order."""
        return tool_schemas(self.release, self.domain)

    def write_tools(self) -> frozenset[str]:
        """The tools τ² marks `ToolType.WRITE` (they may change the database)."""
        return write_tools(self.release, self.domain)

    def execute(self, call: ToolCall, requestor: Requestor = "assistant") -> tuple[str, bool]:
        """Run one call as τ²'s environment answers it: (tool message content, error flag)."""
        message = self._environment(call.name).get_response(
            tool_call_model(self.release, call, requestor))
        return message.content, message.error

    def make_tool_call(self, name: str, requestor: str, arguments: dict[str, Any]) -> Any:
        """τ²'s `Environment.make_tool_call`, as its evaluator replays a reference action (the
        tool's exception raised)."""
        return self._environment(name).make_tool_call(tool_name=name, requestor=requestor,
                                                      **arguments)

    def db_hash(self) -> str:
        """τ²'s hash of the agent database (`Environment.get_db_hash`)."""
        if self._own is None:
            return self._pristine.db_hash
        with without_cycle_collection():
            return str(self._own.get_db_hash())

    def user_db_hash(self) -> str | None:
        """τ²'s hash of the user database (None: airline and retail have no user tools)."""
        own = self._pristine.environment if self._own is None else self._own
        found: str | None = own.get_user_db_hash()
        return found

    def _environment(self, tool: str | None) -> Any:
        """The τ² environment a call of `tool` runs in (None: any call): the shared pristine
        one, unless the call may write (any requestor's), which needs this one's own."""
        if self._own is None and (tool is None or tool in self.write_tools()):
            self._own = self._pristine.copy()
        return self._pristine.environment if self._own is None else self._own


def tool_call_model(release: Tau2Release, call: ToolCall, requestor: str = "assistant",
                    call_id: str = "") -> Any:
    """τ²'s `ToolCall` for one of ours (arguments deep-copied: τ²'s tools may keep them)."""
    model = tau2_module(release, "tau2.data_model.message").ToolCall
    return model(id=call_id, name=call.name, arguments=copy.deepcopy(call.arguments),
                 requestor=requestor)


def apply_initial_state(env: Any, state: Any) -> None:
    """τ²'s orchestrator and evaluator: a task's `initial_state` (initialization data, actions,
    then message history)."""
    if state is None:
        return
    env.set_state(initialization_data=state.initialization_data,
                  initialization_actions=state.initialization_actions,
                  message_history=state.message_history or [])


def _task_model(release: Tau2Release, task: dict[str, Any]) -> Any:
    return tau2_module(release, "tau2.data_model.tasks").Task.model_validate(task)


@contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused: building or dumping a domain database makes
    about a million objects, and collections triggered while they are made (each walking
    every live database) doubled a published run's import (bench/published_runs.py). The
    objects hold no reference cycles (peak memory is unchanged); collection resumes after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Pristine:
    """A domain's τ² environment after one initial state, shared and never written."""

    def __init__(self, release: Tau2Release, domain: str, state: Any):
        self.release, self.domain, self.state = release, domain, state
        self.environment = self.copy()

    @cached_property
    def db_hash(self) -> str:
        with without_cycle_collection():
            return str(self.environment.get_db_hash())

    def copy(self) -> Any:
        """A new τ² environment in this one's state, built as τ² builds one (from a copy of the
        state: τ²'s tools may keep their arguments)."""
        environment = _new_environment(self.release, self.domain)
        apply_initial_state(environment, copy.deepcopy(self.state))
        return environment


_PRISTINE: dict[tuple[Tau2Release, str, str], _Pristine] = {}
PRISTINE_KEPT = 4
"""Pristine environments kept (the least recently used goes first): the airline database
takes about 125 MB in memory; the pinned release's tasks have no initial state (one per
domain)."""


def _pristine(release: Tau2Release, domain: str, key: str, state: Any) -> _Pristine:
    """The shared pristine environment of an initial state (`key`: its canonical JSON)."""
    found = _PRISTINE.pop((release, domain, key), None) or _Pristine(release, domain, state)
    _PRISTINE[release, domain, key] = found
    if len(_PRISTINE) > PRISTINE_KEPT:
        del _PRISTINE[next(iter(_PRISTINE))]
    return found


def _new_environment(release: Tau2Release, domain: str) -> Any:
    db_module, db_class, tools_module, tools_class = DOMAIN_CLASSES[check_domain(domain)]
    with without_cycle_collection():
        db = getattr(tau2_module(release, db_module), db_class).model_validate_json(
            _db_bytes(release, domain))
    tools = getattr(tau2_module(release, tools_module), tools_class)(db)
    environment = tau2_module(release, "tau2.environment.environment").Environment
    return environment(domain_name=domain, policy=_policy(release, domain), tools=tools)


@cache
def _db_bytes(release: Tau2Release, domain: str) -> bytes:
    return release.db_bytes(domain)


@cache
def _policy(release: Tau2Release, domain: str) -> str:
    return release.policy(domain)


def _toolkit_without_db(release: Tau2Release, domain: str) -> Any:
    """The domain's toolkit over no database: its tools' schemas and types need none."""
    _, _, tools_module, tools_class = DOMAIN_CLASSES[domain]
    return getattr(tau2_module(release, tools_module), tools_class)(None)


def tool_schemas(release: Tau2Release, domain: str) -> list[dict[str, Any]]:
    """`Tau2Environment.tools` without an environment (a fresh copy on every call)."""
    return copy.deepcopy(_tool_schemas(release, check_domain(domain)))


def write_tools(release: Tau2Release, domain: str) -> frozenset[str]:
    """`Tau2Environment.write_tools` without an environment."""
    return _write_tools(release, check_domain(domain))


@cache
def _tool_schemas(release: Tau2Release, domain: str) -> list[dict[str, Any]]:
    toolkit = _toolkit_without_db(release, domain)
    return [tool.openai_schema["function"] for tool in toolkit.get_tools().values()]


@cache
def _write_tools(release: Tau2Release, domain: str) -> frozenset[str]:
    toolkit = _toolkit_without_db(release, domain)
    write = tau2_module(release, "tau2.environment.toolkit").ToolType.WRITE
    return frozenset(name for name in toolkit.tools if toolkit.tool_type(name) == write)
