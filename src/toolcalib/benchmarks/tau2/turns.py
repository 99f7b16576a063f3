"""A recorded τ² simulation as our turns and conversation (`simulation_turns`, every tool call
re-executed where an environment is given) and its termination (`termination_of`)."""

from __future__ import annotations

import json
from typing import Any

from toolcalib.benchmarks.tau2.environment import Tau2Environment
from toolcalib.benchmarks.tau2.loop import AGENT_STOP, GREETING
from toolcalib.benchmarks.tau2.score import TERMINATIONS
from toolcalib.benchmarks.tau2.user import is_stop
from toolcalib.benchmarks.tau2.verify import difference, same_result
from toolcalib.jsonio import InputError
from toolcalib.records import Emission, Message, Step, ToolCall, TurnTrace


def termination_of(sim: dict[str, Any], turns: list[TurnTrace]) -> tuple[str | None, str]:
    """Our termination (None: none known) and how it was read."""
    recorded = sim.get("termination_reason")
    if recorded is not None:
        if recorded not in TERMINATIONS:
            return str(recorded), f"recorded {recorded!r} (not a τ² termination reason)"
        return str(recorded), "recorded"
    last = next((m for m in reversed(sim["messages"]) if isinstance(m, dict)
                 and m.get("role") in ("user", "assistant")), None)
    if last is not None and last.get("role") == "user" and is_stop(last.get("content") or ""):
        return "user_stop", "termination_reason missing; the user's last message stops"
    if last is not None and AGENT_STOP in (last.get("content") or ""):
        return "agent_stop", "termination_reason missing; the agent's last message stops"
    return None, "termination_reason missing; the dialogue shows no stop"


def _calls(message: dict[str, Any], where: str) -> list[tuple[str | None, ToolCall]]:
    calls = []
    for number, call in enumerate(message.get("tool_calls") or []):
        arguments = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                arguments = None
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                or not isinstance(arguments, dict):
            raise InputError(f"{where}: field 'tool_calls[{number}]': a call needs a string "
                             "'name' and object 'arguments'")
        calls.append((call.get("id"), ToolCall(name=call["name"], arguments=arguments)))
    return calls


def _usage(message: dict[str, Any], key: str) -> int | None:
    value = (message.get("usage") or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def simulation_turns(sim: dict[str, Any], where: str, environment: Tau2Environment | None
                     ) -> tuple[list[TurnTrace], list[Message], list[str]]:
    """The agent's steps per user turn, the conversation, and the re-executed results that
    differ from the recorded ones (`environment` None: the recorded results are kept)."""
    messages: list[Message] = []
    turns: list[TurnTrace] = []
    differences: list[str] = []
    steps: list[Step] = []
    user: str | None = None
    raw = sim["messages"]
    recorded_results = {m.get("id"): str(m.get("content") or "") for m in raw
                        if isinstance(m, dict) and m.get("role") == "tool"}
    order = [m for m in raw if isinstance(m, dict) and m.get("role") == "tool"]
    next_tool = 0

    def close(ended: Any = "no_call") -> None:
        nonlocal steps
        if steps or user is not None:
            turns.append(TurnTrace(index=len(turns), steps=steps, ended=ended, user=user))
        steps = []

    for number, message in enumerate(raw):
        at = f"{where}: message {number}"
        if not isinstance(message, dict):
            raise InputError(f"{at}: not an object")
        role, content = message.get("role"), message.get("content") or ""
        if role == "user":
            if message.get("tool_calls"):
                raise InputError(f"{at}: field 'tool_calls': the simulated user calls tools "
                                 "(no user tools in airline or retail)")
            close()
            user = str(content)
            messages.append(Message(role="user", content=user))
        elif role == "assistant":
            calls = _calls(message, at)
            if not turns and not steps and user is None and not calls and content == GREETING:
                messages.append(Message(role="assistant", content=GREETING))
                continue
            tool_calls = [call for _, call in calls]
            emission = Emission(text=str(content), tool_calls=tool_calls,
                                structured=bool(tool_calls),
                                parse="ok" if tool_calls else "none",
                                finish_reason="tool_calls" if tool_calls else None,
                                input_tokens=_usage(message, "prompt_tokens"),
                                output_tokens=_usage(message, "completion_tokens"))
            messages.append(Message(role="assistant", content=emission.text,
                                    tool_calls=tool_calls))
            results = []
            stop = AGENT_STOP in emission.text
            for call_id, call in [] if stop else calls:
                if call_id is not None and call_id in recorded_results:
                    recorded = recorded_results[call_id]
                else:
                    recorded = str(order[next_tool].get("content") or "") \
                        if next_tool < len(order) else ""
                next_tool += 1
                result = recorded
                if environment is not None:
                    result, _ = environment.execute(call)
                    if not same_result(result, recorded):
                        differences.append(f"message {number} ({call.name}): "
                                           f"{difference(recorded, result)}")
                results.append(result)
                messages.append(Message(role="tool", name=call.name, content=result))
            steps.append(Step(index=len(steps), emission=emission, results=results))
            if not tool_calls or stop:
                close()
                user = None
        elif role != "tool":
            raise InputError(f"{at}: field 'role': {role!r}, expected user, assistant or tool")
    close()
    return turns, messages, differences
