"""Deterministic reference policies: they calibrate the diagnostic itself.

`oracle` replays the ground truth (all of a turn's gold calls in its first step, then a short
closing text; at gold ask/refuse turns a plain question/refusal) and must score GAR = Acc = 1.
`always_call` opens every turn with a syntactically valid call to the first visible tool
(required arguments filled with typed placeholders), then closes the turn with text.
`never_call`, `always_ask` and `always_refuse` answer every step with one fixed text.
`oracle_no_confirm` is the oracle where nothing needs confirming (BFCL). A benchmark may give
a policy a meaning of its own (its plugin's `policies`, which the generate stage hands to the
backend: τ²'s oracle asks for confirmation before each write, its `oracle_no_confirm` never
does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolcalib.backends.base import Answer, Policy, Request
from toolcalib.config import ModelSpec, StrictModel, model_options
from toolcalib.records import Emission, ToolCall
from toolcalib.registry import pick

ASK_TEXT = "Could you please provide the missing information I need to do this?"
REFUSE_TEXT = "I cannot do this: none of the available functions fits this request."
CLOSING_TEXT = "Done."
NEUTRAL_TEXT = "Understood."

PLACEHOLDERS: dict[str, Any] = {
    "string": "placeholder", "integer": 0, "number": 0.0, "boolean": False, "array": [],
    "object": {},
}
"""A placeholder per JSON-schema type (cases carry tools in canonical JSON schema)."""


def _text(text: str) -> Emission:
    return Emission(text=text, finish_reason="stop")


def _calls(calls: list[ToolCall]) -> Emission:
    return Emission(tool_calls=calls, structured=True, parse="ok", finish_reason="tool_calls")


def _first_step_of_turn(request: Request) -> bool:
    return request.step == 0


def oracle(request: Request) -> Emission:
    case = request.case
    if case is None:
        raise ValueError("the oracle policy answers the steps of a case")
    turn = case.turns[request.turn]
    if not _first_step_of_turn(request):
        return _text(CLOSING_TEXT)
    if turn.gold_calls:
        return _calls(turn.gold_calls)
    return _text(ASK_TEXT if turn.gold_action == "ask" else REFUSE_TEXT)


def placeholder_call(doc: dict[str, Any]) -> ToolCall:
    parameters = doc.get("parameters") or {}
    properties = parameters.get("properties") or {}
    arguments = {}
    for name in parameters.get("required") or []:
        schema = properties.get(name) or {}
        if schema.get("enum"):
            arguments[name] = schema["enum"][0]
        else:
            arguments[name] = PLACEHOLDERS.get(str(schema.get("type", "string")), "placeholder")
    return ToolCall(name=doc["name"], arguments=arguments)


def always_call(request: Request) -> Emission:
    if not _first_step_of_turn(request) or not request.tools:
        return _text(CLOSING_TEXT)
    return _calls([placeholder_call(request.tools[0])])


POLICIES: dict[str, Policy] = {
    "oracle": oracle,
    "oracle_no_confirm": oracle,
    "always_call": always_call,
    "never_call": lambda request: _text(NEUTRAL_TEXT),
    "always_ask": lambda request: _text(ASK_TEXT),
    "always_refuse": lambda request: _text(REFUSE_TEXT),
}


class PolicyOptions(StrictModel, frozen=True, kw_only=True):
    policy: Literal[tuple(POLICIES)]  # type: ignore[valid-type]


class PolicyBackend:
    """`own`: the policies a benchmark gives a meaning of its own (`Benchmark.policies`)."""

    def __init__(self, spec: ModelSpec, own: Mapping[str, Policy] | None = None):
        policy = spec.options.get("policy")
        generic = pick("policy", POLICIES, policy, f"model '{spec.name}'")
        assert isinstance(policy, str)  # `pick` raised for anything that names no policy
        model_options(PolicyOptions, spec)
        self._act = (own or {}).get(policy, generic)
        self.name = spec.name
        self.policy = policy

    def identity(self) -> dict[str, Any]:
        return {"backend": "policy", "policy": self.policy}

    cacheable = False

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        return [self._act(request) for request in requests]


def make(spec: ModelSpec) -> PolicyBackend:
    return PolicyBackend(spec)
