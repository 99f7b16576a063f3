"""The one interface every model backend implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolcalib.records import Case, Emission, Message


class InfrastructureError(RuntimeError):
    """A failure that is not model behaviour (server down, retries exhausted): never scored."""


class ContextOverflow(InfrastructureError):
    """The conversation no longer fits the model's context window."""


@dataclass(frozen=True)
class Request:
    """One model step. `case`, `turn` and `step` are for reference policies only: real backends
    see just the messages, the tools and the generation parameters. A request that is no step
    of a case (a judge's question about an emission) has no case."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    case: Case | None = None
    turn: int = 0
    step: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    role: str = "agent"
    """Who answers: `agent` (the model under test) or `user` (a simulated user's backend)."""
    extras: tuple[str, ...] = ()
    """Members of the tool docs that are the benchmark's, not the tool's (BFCL: `response`,
    its result schema): a backend leaves them out of what the model sees unless its options
    keep them (`keep_response`). They stay in `tools`, and so in the response store's key."""


MACHINE_FACTS = ("cpu_capability", "cpu_vendor", "versions")
"""Identity fields that describe the machine rather than the answers' recipe (the CPU kernel
family and vendor, package versions). They key the response store, since they can change a bit, but
trajectories do not record them: the run manifest does (`manifest.machine`, `packages`), so a
build on another CPU whose emissions are equal writes the same trajectory bytes."""


def recorded_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """What a trajectory records of a backend's identity: everything but MACHINE_FACTS."""
    return {key: value for key, value in identity.items() if key not in MACHINE_FACTS}


Answer = Emission | InfrastructureError
"""What a backend returns per request: the model's raw emission, or why there is none."""
Policy = Callable[[Request], Emission]
"""A reference policy: one emission per request, a function of the request alone."""


class Backend(Protocol):
    name: str
    cacheable: bool
    """Whether answers go through the response store (False for free reference policies)."""

    def identity(self) -> dict[str, Any]:
        """What identifies the model's answers (backend, model, weights hash, params)."""

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        """One answer per request, in order; a failed request is an InfrastructureError in
        its slot (it never raises for one request's failure)."""
