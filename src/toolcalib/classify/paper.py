"""The `paper` profile: the published cue classifier, reproduced exactly from packaged data."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from toolcalib.classify.base import Context, EmissionAction, Profile, packaged_yaml
from toolcalib.classify.confirm import rule_verdicts
from toolcalib.classify.default import DefaultProfile

if TYPE_CHECKING:
    from toolcalib.classify.base import ConfirmVerdict
    from toolcalib.records import ActionClass
    from toolcalib.writes import WriteContext

DATA_FILE = "paper_classifier.yaml"
PHRASE_CLASSES: tuple[Literal["refuse", "ask", "confirm"], ...] = ("refuse", "ask", "confirm")
"""Phrase families in the order they are tried; ask's question mark is tried before its phrases."""


class CallPattern(NamedTuple):
    """A tool-call pattern: `match` hits only at the start of the text, `search` anywhere."""

    name: str
    regex: re.Pattern[str]
    mode: str

    def find(self, text: str) -> re.Match[str] | None:
        return self.regex.match(text) if self.mode == "match" else self.regex.search(text)


@cache
def load_cues() -> dict[str, Any]:
    """The packaged cue tables (never the shared reference copy)."""
    cues: dict[str, Any] = packaged_yaml(DATA_FILE)
    return cues


def compile_pattern(entry: dict[str, Any]) -> CallPattern:
    if entry["mode"] not in ("match", "search"):
        raise ValueError(f"{DATA_FILE}: pattern {entry['name']}: unknown mode {entry['mode']!r}")
    flags = re.NOFLAG
    for flag in entry["flags"]:
        flags |= re.RegexFlag[flag]
    return CallPattern(entry["name"], re.compile(entry["regex"], flags), entry["mode"])


class PaperProfile(Profile):
    """Tool-call patterns on the raw text, then refuse > ask > confirm cues on the normalised,
    lower-cased text, else other. The context is not read: the published classifier saw the
    emission alone."""

    name = "paper"

    def __init__(self) -> None:
        cues = load_cues()
        self.patterns = tuple(compile_pattern(entry) for entry in cues["tool_call_patterns"])
        self.quotes = str.maketrans(
            {char: quote for quote, chars in cues["quote_normalisation"].items() for char in chars}
        )
        self.question_mark: str = cues["ask_question_mark"]
        self.phrases = {family: tuple(cues[family]) for family in PHRASE_CLASSES}

    @cached_property
    def confirm_reader(self) -> DefaultProfile:
        """Who reads a write's texts for the confirm rule (`classify.confirm.Reader`): a
        `default` profile of this profile's own, made at the first write. The published
        classifier has no confirm rule and no sentence split; read by it, the rule would give
        other verdicts than the one every rule profile has given."""
        return DefaultProfile()

    def confirm_verdicts(self, contexts: Sequence[WriteContext]) -> list[ConfirmVerdict]:
        """The confirm rule's verdict on each write, read as `default` reads (`confirm_reader`)."""
        return rule_verdicts(contexts, self.confirm_reader)

    def classify_text(self, text: str, context: Context) -> EmissionAction:
        for pattern in self.patterns:
            if found := pattern.find(text):
                return self._action("tool_call", pattern.name, found.group(0))
        normalised = text.translate(self.quotes)
        lower = normalised.lower()
        for family in PHRASE_CLASSES:
            if family == "ask" and self.question_mark in normalised:
                return self._action("ask", "question_mark", self.question_mark)
            for phrase in self.phrases[family]:
                if (at := lower.find(phrase)) >= 0:
                    return self._action(family, phrase, _original(text, lower, at, phrase))
        return EmissionAction(action="other", rule=f"{self.name}:other")

    def _action(self, family: ActionClass, detail: str, evidence: str) -> EmissionAction:
        return EmissionAction(
            action=family, rule=f"{self.name}:{family}:{detail}", evidence=evidence
        )


def _original(text: str, lower: str, at: int, phrase: str) -> str:
    """The cue as the model wrote it (case, typographic quotes) where positions line up."""
    return text[at : at + len(phrase)] if len(lower) == len(text) else phrase
