"""τ²-bench's simulated user: an LLM (any backend) prompted as τ² prompts it, or the
deterministic reference user.

The LLM user sees τ²'s user-simulation guidelines and the task's user instructions as its
system prompt, and the conversation from its side: the agent's texts as `user` messages, its
own as `assistant` (the agent's tool calls and their results are not shown, as in τ²). It
stops the episode with one of τ²'s stop signals.

The reference user is a policy for CI and for the reference agents, not a stand-in for an LLM
user when reporting model results: it opens with the task's reason for calling and known
information; when the agent asks (its message read alone as `ask`, by the classifier the
generate stage hands the loop: `default`'s) it answers with the task's known information and
nothing else; when the agent asks for approval (`confirm`) it approves explicitly; anything
else (an answer, a refusal, a summary) ends the episode (`###STOP###`), as do `MAX_REPLIES`
replies. It cannot negotiate, change its mind, follow the task's conditional instructions ("if
the agent says X, mention Y"), reveal unknown details progressively, or reject a wrong
proposal: it approves every confirmation request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.records import Emission, Message, ReadAlone

STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
STOP_SIGNALS = (STOP, TRANSFER, OUT_OF_SCOPE)
"""τ²'s user stop signals: any of them ends the episode (`user_stop`)."""

REFERENCE = "reference"
"""The config name of the deterministic reference user."""
REFERENCE_VERSION = 1
"""Bumped whenever the reference user's answers change (recorded in `user_identity`)."""
MAX_REPLIES = 12
"""The reference user ends the episode after this many replies."""
APPROVAL = "Yes, I confirm. Please go ahead."
NOTHING_KNOWN = "I'm sorry, I don't have that information."

SYSTEM_PROMPT = "{guidelines}\n\n<scenario>\n{instructions}\n</scenario>"
"""τ²'s user-simulator system prompt (its `UserSimulator.system_prompt`)."""


def instructions_text(instructions: Any) -> str:
    """τ²'s text of a task's user instructions (`StructuredUserInstructions.__str__`)."""
    if isinstance(instructions, str):
        return instructions
    tab = "\t"

    def indent(text: str) -> str:
        return "".join(tab + line if line.strip() else line
                       for line in text.splitlines(keepends=True))

    lines = [f"Domain: {instructions['domain']}",
             f"Reason for call:\n{indent(instructions['reason_for_call'])}"]
    if instructions.get("known_info") is not None:
        lines.append(f"Known info:\n{indent(instructions['known_info'])}")
    if instructions.get("unknown_info") is not None:
        lines.append(f"Unknown info:\n{indent(instructions['unknown_info'])}")
    lines.append(f"Task instructions:\n{indent(instructions['task_instructions'])}")
    return "\n".join(lines)


def is_stop(text: str) -> bool:
    return any(signal in text for signal in STOP_SIGNALS)


@dataclass(frozen=True)
class LlmUser:
    """A backend playing the user: one `role="user"` request per reply."""

    guidelines: str
    params: dict[str, Any]

    def identity(self, backend_identity: dict[str, Any]) -> dict[str, Any]:
        return backend_identity

    def reply(self, task: dict[str, Any], conversation: list[Message]) -> Request:
        """The request for the user's next message (its answer goes through `read`)."""
        system = SYSTEM_PROMPT.format(
            guidelines=self.guidelines,
            instructions=instructions_text(task["user_scenario"]["instructions"]))
        flipped = [Message(role="system", content=system)] + [
            Message(role="user" if m.role == "assistant" else "assistant", content=m.content)
            for m in conversation if m.role in ("user", "assistant") and not m.tool_calls]
        return Request(messages=flipped, tools=[], params=self.params, role="user")

    def read(self, answer: Answer) -> str | InfrastructureError:
        """The user's text from the backend's answer, or the infrastructure error."""
        if isinstance(answer, InfrastructureError):
            return answer
        return answer.text if isinstance(answer, Emission) else str(answer)


@dataclass(frozen=True)
class ReferenceUser:
    """The deterministic reference user (see the module docstring); `reads`: the class of the
    agent's message read alone (the user's replies, `REFERENCE_VERSION`, never change with
    how the classifier reads context)."""

    reads: ReadAlone

    def identity(self, backend_identity: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"user": REFERENCE, "version": REFERENCE_VERSION}

    def reply(self, task: dict[str, Any], conversation: list[Message]) -> str:
        """The user's next message, asking no backend."""
        instructions = task["user_scenario"]["instructions"]
        known = (instructions.get("known_info") or "").strip() \
            if isinstance(instructions, dict) else ""
        replies = sum(1 for m in conversation if m.role == "user")
        if replies == 0:
            reason = instructions["reason_for_call"].strip() \
                if isinstance(instructions, dict) else str(instructions)
            return f"{reason}\n{known}".strip()
        if replies >= MAX_REPLIES:
            return STOP
        last = next((m for m in reversed(conversation)
                     if m.role == "assistant" and not m.tool_calls), None)
        kind = self.reads(Emission(text=last.content)) if last is not None else "other"
        if kind == "confirm":
            return APPROVAL
        if kind == "ask":
            return known or NOTHING_KNOWN
        return STOP


User = LlmUser | ReferenceUser
"""Who plays τ²'s user (`loop.conversation`)."""
