"""The `judge` profile's confirm verdict: a judge model says whether one write call was
confirmed, from the conversation before it, with a fixed, versioned rubric
(`data/confirm_rubric.yaml`).

A request shows the rubric's system prompt (its version on the last line), then one user
message: the write call (tool name and arguments as JSON) and the last `window` (10) messages
before the message holding the call, oldest first, as the published method shows them. Each
message is one line `[role] text`: an assistant message with calls as `[assistant: tool call]
name {arguments}` (its text, if any, after them), a tool result as `[tool name] result`;
reasoning blocks removed. A message longer than the rubric's `max_chars` keeps its first two
thirds and last third of them (a request for approval ends with its question), a tool result
its first `tool_chars` (a judge needs the dialogue, not the records, and each character costs
prompt time). No tools.

The reply is read strictly (`parse_confirm_reply`): reasoning blocks and surrounding
whitespace removed, exactly `yes` or `no` (any case, one optional full stop). Rules:
`judge:confirm:yes` (confirmed), `judge:confirm:no`, and `judge:confirm:unparsed` for anything
else: counted (`unparsed`), not confirmed, the reply as evidence, never guessed from its words.
A failed request is never a verdict: `JudgeUnavailable` is raised and nothing is stored for it.
Requests go through the judge's backend (the response store), so a rerun makes no calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from typing import Annotated

from msgspec import Meta

from toolcalib.backends.base import Backend, InfrastructureError, Request
from toolcalib.classify.base import ConfirmVerdict, packaged_yaml
from toolcalib.classify.text import strip_reasoning
from toolcalib.config import StrictModel
from toolcalib.jsonio import from_data
from toolcalib.records import Emission, Message, ToolCall
from toolcalib.writes import WriteContext

DATA_FILE = "confirm_rubric.yaml"
REPLY = re.compile(r"\s*(yes|no)\.?\s*", re.IGNORECASE)
EVIDENCE_CHARS = 200


class ConfirmRubric(StrictModel, frozen=True, kw_only=True):
    """The versioned confirm prompt (see `data/confirm_rubric.yaml`)."""

    version: str
    window: Annotated[int, Meta(ge=1)]
    max_chars: Annotated[int, Meta(ge=3)]
    tool_chars: Annotated[int, Meta(ge=1)]
    system: str
    user: str

    def messages(self, context: WriteContext) -> list[Message]:
        """The judge request for one write."""
        shown = context.messages[-self.window:]
        window = "\n".join(self._line(message) for message in shown) or "(nothing)"
        return [Message(role="system", content=f"{self.system}\n(rubric {self.version})"),
                Message(role="user", content=self.user.format(call=_call(context.call),
                                                              window=window))]

    def _line(self, message: Message) -> str:
        text = " ".join(strip_reasoning(message.content).split())
        if message.role == "assistant" and message.tool_calls:
            calls = "; ".join(map(_call, message.tool_calls))
            head, text = "[assistant: tool call]", f"{calls} {text}".strip()
        elif message.role == "tool":
            head = f"[tool {message.name}]" if message.name else "[tool]"
        else:
            head = f"[{message.role}]"
        if message.role == "tool":
            cut = text if len(text) <= self.tool_chars else text[: self.tool_chars] + " ..."
        elif len(text) <= self.max_chars:
            cut = text
        else:
            tail = self.max_chars // 3
            cut = f"{text[: self.max_chars - tail]} ... {text[-tail:]}"
        return f"{head} {cut}"


def _call(call: ToolCall) -> str:
    return f"{call.name} {json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)}"



class JudgeUnavailable(InfrastructureError):
    """A judge backend failed a request (the `judge` profile's labels or its confirm
    verdicts): the stage fails; nothing is recorded for it."""

@cache
def load_confirm_rubric() -> ConfirmRubric:
    """The packaged confirm rubric."""
    return from_data(packaged_yaml(DATA_FILE), ConfirmRubric, DATA_FILE)


def parse_confirm_reply(reply: str) -> bool | None:
    """True for `yes`, False for `no`, None when the reply is not exactly one of them."""
    found = REPLY.fullmatch(strip_reasoning(reply))
    return None if found is None else found.group(1).lower() == "yes"


class ConfirmJudge:
    """A judge backend's verdicts on writes, each distinct request asked once per run."""

    def __init__(self, backend: Backend, batch_size: int = 1,
                 rubric: ConfirmRubric | None = None):
        self.backend = backend
        self.batch_size = batch_size
        self.rubric = rubric or load_confirm_rubric()
        self.verdicts: dict[str, ConfirmVerdict] = {}
        """The request's user message -> verdict."""
        self.unparsed = 0

    def judge(self, contexts: Sequence[WriteContext]) -> list[ConfirmVerdict]:
        requests = [self.rubric.messages(context) for context in contexts]
        keys = [messages[-1].content for messages in requests]
        new = list({key: messages for key, messages in zip(keys, requests, strict=True)
                    if key not in self.verdicts}.items())
        for start in range(0, len(new), self.batch_size):
            self._ask(new[start:start + self.batch_size])
        return [self.verdicts[key] for key in keys]

    def _ask(self, batch: list[tuple[str, list[Message]]]) -> None:
        answers = self.backend.generate_batch([Request(messages=messages, tools=[])
                                               for _, messages in batch])
        failed = [a for a in answers if isinstance(a, InfrastructureError)]
        if failed:
            raise JudgeUnavailable(
                f"judge '{self.backend.name}' failed {len(failed)} of {len(batch)} confirm "
                f"requests (first: {failed[0]}); no verdict is recorded for them: rerun when "
                "it is back")
        for (key, _), answer in zip(batch, answers, strict=True):
            assert isinstance(answer, Emission)
            reply = answer.text.strip()
            confirmed = parse_confirm_reply(reply)
            self.unparsed += confirmed is None
            rule = "judge:confirm:unparsed" if confirmed is None else \
                "judge:confirm:yes" if confirmed else "judge:confirm:no"
            self.verdicts[key] = ConfirmVerdict(bool(confirmed), rule, reply[:EVIDENCE_CHARS])

    def summary(self) -> str:
        return (f"{len(self.verdicts)} writes judged ({self.rubric.version}), "
                f"{self.unparsed} unparseable replies (not confirmed)")
