"""The `judge` profile: a configured model labels text emissions with a fixed, versioned rubric.

What the rules decide, without the judge: everything the `default` profile classes as
`tool_call` or `malformed` (calls the harness executes, call shapes in the text, malformed
parses), outputs the record did not keep (`unknown`, never sent to the judge), and emissions
with no words outside reasoning blocks (`default`'s `other`). Every other emission's visible
text (reasoning removed, cut to the rubric's `max_chars`) is one judge request: the rubric's
system prompt, its examples as earlier user/assistant turns, then the text; no tools. The
judge sees the emission alone: the context a profile is given (`classify.base.Context`) is not
in its request (its rubric is versioned and validated on the text alone, and its answers are
stored by request: a context in the prompt is a new rubric, to validate on its own). The rules
before it read the context as `default` does; none of the classes they decide
(tool_call, malformed, unknown, no words) depends on it.

The reply is read strictly (`parse_reply`): reasoning blocks and surrounding whitespace
removed, it must be exactly one of ask/refuse/confirm/other (any case, one optional full stop).
Anything else is counted (`unparsed`) and classed `other` with rule `judge:other:unparsed` and
the reply as evidence: never guessed from the words. A judged emission's rule is
`judge:<class>`, its evidence the reply. A failed request (`InfrastructureError`) is never a
label: `JudgeUnavailable` is raised, nothing is stored for it, and a rerun asks again.

Requests go through the response store like any generation, so a rerun makes no judge calls.

Write calls (τ²'s) get the judge's confirm verdict, from the conversation before each, with
its own versioned rubric (`classify.confirm_judge`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Annotated, Literal, TypeGuard

import yaml
from msgspec import Meta

from toolcalib.backends import make_backend
from toolcalib.backends.base import Backend, InfrastructureError, Request
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.classify.base import NO_CONTEXT, Context, EmissionAction, Profile
from toolcalib.classify.confirm_judge import ConfirmJudge, JudgeUnavailable
from toolcalib.classify.text import WORD, strip_reasoning
from toolcalib.config import ModelSpec, StrictModel
from toolcalib.jsonio import InputError, from_data
from toolcalib.records import Emission, Message

if TYPE_CHECKING:
    from toolcalib.classify.base import ConfirmVerdict
    from toolcalib.writes import WriteContext

DATA_FILE = "judge_rubric.yaml"
JudgedClass = Literal["ask", "refuse", "confirm", "other"]
JUDGED: tuple[JudgedClass, ...] = ("ask", "refuse", "confirm", "other")
"""The classes a judge chooses between; the rules decide tool_call, malformed and unknown."""
REPLY = re.compile(r"\s*(ask|refuse|confirm|other)\.?\s*", re.IGNORECASE)
EVIDENCE_CHARS = 200


class Example(StrictModel, frozen=True, kw_only=True):
    text: str
    label: JudgedClass


class Rubric(StrictModel, frozen=True, kw_only=True):
    """The versioned prompt (see `data/judge_rubric.yaml`)."""

    version: str
    max_chars: Annotated[int, Meta(ge=1)]
    system: str
    user: str
    examples: list[Example]

    def messages(self, text: str) -> list[Message]:
        """The judge request for one emission's visible text."""
        shots = [message
                 for example in self.examples
                 for message in (Message(role="user", content=self.user.format(text=example.text)),
                                 Message(role="assistant", content=example.label))]
        return [Message(role="system", content=self.system), *shots,
                Message(role="user", content=self.user.format(text=text))]


@cache
def load_rubric() -> Rubric:
    """The packaged rubric."""
    data = files("toolcalib").joinpath("data", DATA_FILE).read_text("utf-8")
    return from_data(yaml.safe_load(data), Rubric, DATA_FILE)


def parse_reply(reply: str) -> JudgedClass | None:
    """The class a judge's reply names, or None when it is not exactly one class name."""
    found = REPLY.fullmatch(strip_reasoning(reply))
    name = found.group(1).lower() if found else ""
    return name if _is_judged(name) else None


def _is_judged(name: str) -> TypeGuard[JudgedClass]:
    return name in JUDGED


class JudgeProfile(Profile):
    """The default profile's call rules, then a judge backend's answer (module docstring)."""

    name = "judge"

    def __init__(self, backend: Backend, rules: Profile, batch_size: int = 1,
                 rubric: Rubric | None = None):
        self.backend = backend
        self.rules = rules
        """The rule profile deciding what the judge is not asked about (the `default`
        profile, given by the caller: `classify.choose`)."""
        self.batch_size = batch_size
        self.rubric = rubric or load_rubric()
        self.verdicts: dict[str, EmissionAction] = {}
        """Judged visible text -> action (a text is asked about once per run)."""
        self.unparsed = 0
        self.confirm: ConfirmJudge | None = None
        """The `ConfirmJudge`, made at the first write asked about."""

    def confirm_verdicts(self, contexts: Sequence[WriteContext]) -> list[ConfirmVerdict]:
        """The judge's verdict on each write (`classify.confirm_judge`)."""
        if self.confirm is None:
            self.confirm = ConfirmJudge(self.backend, self.batch_size)
        return self.confirm.judge(contexts)

    def question(self, emission: Emission) -> str | None:
        """The text the judge is asked about, or None when the rules decide (whether they do
        depends on no context: `NO_CONTEXT`)."""
        if self.rules.classify(emission, NO_CONTEXT).action not in JUDGED:
            return None
        visible = strip_reasoning(emission.text).strip()
        return visible[: self.rubric.max_chars] if WORD.search(visible) else None

    def classify(self, emission: Emission, context: Context) -> EmissionAction:
        text = self.question(emission)
        if text is None:
            return self.rules.classify(emission, context)
        if text not in self.verdicts:
            self._judge([text])
        return self.verdicts[text]

    def classify_text(self, text: str, context: Context) -> EmissionAction:
        return self.classify(Emission(text=text), context)

    def prepare(self, emissions: Sequence[Emission]) -> None:
        """Ask about every new text in batches of `batch_size` requests."""
        texts = [t for t in dict.fromkeys(map(self.question, emissions))
                 if t is not None and t not in self.verdicts]
        for start in range(0, len(texts), self.batch_size):
            self._judge(texts[start:start + self.batch_size])

    def _judge(self, texts: list[str]) -> None:
        requests = [Request(messages=self.rubric.messages(text), tools=[]) for text in texts]
        answers = self.backend.generate_batch(requests)
        failed = [a for a in answers if isinstance(a, InfrastructureError)]
        if failed:
            raise JudgeUnavailable(
                f"judge '{self.backend.name}' failed {len(failed)} of {len(texts)} requests "
                f"(first: {failed[0]}); no label is recorded for them: rerun when it is back")
        for text, answer in zip(texts, answers, strict=True):
            assert isinstance(answer, Emission)
            reply = answer.text.strip()
            label = parse_reply(reply)
            self.unparsed += label is None
            self.verdicts[text] = EmissionAction(
                action=label or "other", rule=f"judge:{label}" if label else "judge:other:unparsed",
                evidence=reply[:EVIDENCE_CHARS])

    def summary(self) -> str:
        """What the judge did, for the stage's log."""
        counts = ""
        if isinstance(self.backend, StoredBackend):
            counts = (f"{self.backend.misses} judge calls, {self.backend.hits} answers from the "
                      f"store, ")
        writes = f"; {self.confirm.summary()}" if self.confirm is not None else ""
        return (f"judge '{self.backend.name}' ({self.rubric.version}): {len(self.verdicts)} "
                f"texts judged, {counts}{self.unparsed} unparseable replies (classed other)"
                f"{writes}")


def make_judge(spec: ModelSpec, store: str, rules: Profile) -> JudgeProfile:
    """The judge profile over `spec`'s backend, every request through the response store;
    `rules` decides what it is not asked about (`JudgeProfile.rules`)."""
    backend = make_backend(spec)
    if not backend.cacheable:
        raise InputError(f"judge model '{spec.name}': backend '{spec.backend}' is a reference "
                         "policy, not a model that can judge")
    return JudgeProfile(StoredBackend(backend, ResponseStore(store)), rules,
                        batch_size=spec.batch_size)
