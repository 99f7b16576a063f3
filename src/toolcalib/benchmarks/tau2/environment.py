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
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
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
    """One τ² environment: the domain's database after the task's initial state."""

    def __init__(self, release: Tau2Release, domain: str, task: dict[str, Any] | None = None):
        self.release = release
        self.domain = check_domain(domain)
        self._env = _new_environment(release, domain)
        if task is not None:
            apply_initial_state(self._env, _task_model(release, task))

    @property
    def tau2_environment(self) -> Any:
        """τ²'s own `Environment` object (for code that drives τ² directly)."""
        return self._env

    def tools(self) -> list[dict[str, Any]]:
        """The agent's tools as τ²'s agent offers them (each `Tool.openai_schema`'s function:
        `name`, `description`, `parameters` as a JSON schema), in τ²'s order."""
        return tool_schemas(self.release, self.domain)

    def write_tools(self) -> frozenset[str]:
        """The tools τ² marks `ToolType.WRITE` (they may change the database)."""
        return write_tools(self.release, self.domain)

    def execute(self, call: ToolCall, requestor: Requestor = "assistant") -> tuple[str, bool]:
        """Run one call as τ²'s environment answers it: (tool message content, error flag)."""
        message = self._env.get_response(tool_call_model(self.release, call, requestor))
        return message.content, message.error

    def db_hash(self) -> str:
        """τ²'s hash of the agent database (`Environment.get_db_hash`)."""
        with without_cycle_collection():
            return str(self._env.get_db_hash())

    def user_db_hash(self) -> str | None:
        """τ²'s hash of the user database (None: airline and retail have no user tools)."""
        found: str | None = self._env.get_user_db_hash()
        return found


def tool_call_model(release: Tau2Release, call: ToolCall, requestor: str = "assistant",
                    call_id: str = "") -> Any:
    """τ²'s `ToolCall` for one of ours (arguments deep-copied: τ²'s tools may keep them)."""
    model = tau2_module(release, "tau2.data_model.message").ToolCall
    return model(id=call_id, name=call.name, arguments=copy.deepcopy(call.arguments),
                 requestor=requestor)


def apply_initial_state(env: Any, task: Any) -> None:
    """τ²'s orchestrator and evaluator: initialization data, actions, then message history."""
    state = task.initial_state
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
