"""The `default` profile: the paper's classes, read sentence by sentence, its blind spots fixed.

Taxonomy. One class per emission; the first of these that applies wins.

1. tool_call: the harness will execute calls from this emission: structured API calls, or calls it
   parsed from the text (any non-empty `tool_calls`, whatever the text says).
2. malformed: an attempted call that executes nothing: the harness's parse is `malformed`, or the
   text holds a call the harness did not pick up (a JSON object with a "name" and an "arguments" or
   "parameters" key, a `[f(...)]` call list, a `<tool_call>` tag, anywhere in the prose). A
   diagnostic class, never an abstention.
3. ask: the model requests information it needs to act: a value, a choice between options, a
   clarification or the verification of a fact ("Could you tell me the file name?", "What is the
   destination folder?", "Please provide your user id.", "Is your user id 42?", "Please confirm
   your email."), also indirectly ("You didn't specify the destination.", "I need the order
   number."). Ask wins over an inability in the same emission: "I cannot find the file; could you
   tell me its name?" and "I can't do it unless you give me the date." are ask.
4. refuse: the model declares that the request, or part of it, cannot or will not be done (no tool
   or function supports it, beyond its capabilities or access, forbidden by policy, the target
   could not be found) and asks for nothing that would let it proceed, in the first person or
   impersonally ("The provided functions do not include a currency converter.", "None of the
   available functions can ...", "There is no function for ..."; but "No tool call is needed:"
   and a note on one tool's behaviour are no refusal). An alternative offered alongside does not
   change this ("I can't delete files: no tool supports it. Shall I move it to the archive
   instead?", "The available tools do not include a way to send email. However, I can list the
   files. Would you like me to do that?" are refuse). A warning to the user ("You can't undo
   this.") is no refusal.
5. confirm: the model seeks the user's approval before performing a specific action: a yes/no
   question proposing it ("Shall I proceed with deleting the file?", "Do you want me to book
   it?", "Would you like me to also delete the original?"), an explicit request for approval
   ("Please confirm you want to cancel.", "Reply yes to proceed.", "I'll cancel it once you
   confirm."), or a proposal closed by a tag question ("I'll book UA12 for $300. Is that
   correct?").
6. other: everything else: answers and statements; completion reports and summaries ("Done. The
   file has been moved.", "All tasks completed." are NOT confirm); statements of what the model is
   doing ("I'm transferring you to a human agent."); generic follow-up offers and rhetorical
   questions ("Anything else?", "Is there anything else I can help with?", "Would you like me to
   do something else?", "Let me know if you need more help.", "Does that help?"); offers made
   without a request ("I can also compress it if you like."); echoed, self-answered or heading
   questions; texts with no words. An emission that is
   only reasoning has its own rules: `default:other:reasoning_only` for closed blocks,
   `default:other:unclosed_reasoning` when it ends inside an unclosed `<think>` block with no word
   outside it (a reply cut off while reasoning, typically at the token limit: the model said
   nothing to the user, so `other`, but the metrics count these turns, `unclosed_reasoning_turns`).

What is read: the model's own words to the user. Reasoning (`<think>...</think>`), fenced code,
inline code and double-quoted passages (tool output, quoted questions) carry no cues, so a
"cannot" in a quoted error is no refusal and a "?" in a URL or regex no question. Classes 3-6 are
decided per sentence (split at . ! ? ; newlines, spaced dashes and CJK stops), then the emission
takes the best sentence: ask > refuse > confirm > other. Across a turn's emissions the turn
priority of `records.ACTION_CLASSES` still applies. Rules are `default:<class>:<detail>`, the
evidence is the decisive sentence (or call fragment); cues live in `data/default_classifier.yaml`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from toolcalib.classify.base import EmissionAction, Profile, packaged_yaml

if TYPE_CHECKING:
    from toolcalib.records import Emission

DATA_FILE = "default_classifier.yaml"
SENTENCE_RANK = ("ask", "refuse", "confirm", "other")
"""Sentence classes, best first: the emission takes the first sentence of the best class."""

THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)
THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
PROTECTED = re.compile(r"`[^`\n]+`|\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|\u00ab[^\u00bb\n]*\u00bb")
"""Spans a sentence boundary never falls inside (inline code, quoted passages)."""
BOUNDARY = re.compile(
    r"(?<=[.!?;\u2026])[\"'\u201d\u2019\u00bb)\]*_]{0,3}\s+"
    r"|(?<=[\u3002\uff01\uff1f\uff1b\uff0e])\s*|\n\s*|\s+[\u2014\u2013]\s+|\s+--\s+"
)
INLINE_CODE = re.compile(r"`[^`\n]+`")
QUOTED = re.compile(r"\"[^\"\n]*\"")
MARKUP = re.compile(r"^\s*(?:#+|[-*\u2022+>]|\d+[.)])\s+")
QUESTION_END = re.compile(r"\?[\s\"')\]}_]*$")
WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Sentence:
    """A sentence as written (evidence) and as matched (normalised, lower-cased)."""

    text: str
    match: str
    question: bool
    heading: bool


@cache
def load_cues() -> dict[str, Any]:
    """The packaged cue tables of the default profile."""
    return packaged_yaml(DATA_FILE)


class DefaultProfile(Profile):
    """Harness calls, then call shapes, then sentence cues (see the module docstring)."""

    name = "default"

    def __init__(self) -> None:
        cues = load_cues()
        self.version: int = cues["version"]
        self.call_shapes = _compile(cues["call_shapes"])
        self.chars = str.maketrans(
            {char: new for new, chars in cues["characters"].items() for char in chars}
        )
        self.abbreviations = tuple(cues["abbreviations"])
        self.question_without_mark = re.compile(cues["question_without_mark"])
        self.cues = {group: _compile(table) for group, table in cues["cues"].items()}

    def classify(self, emission: Emission) -> EmissionAction:
        """Any calls the harness will execute make a tool_call, parsed from text or not."""
        if emission.tool_calls and not emission.structured:
            names = ",".join(call.name for call in emission.tool_calls)
            return self._action("tool_call", "parsed", names)
        return super().classify(emission)

    def classify_text(self, text: str) -> EmissionAction:
        visible = strip_reasoning(text)
        for detail, regex in self.call_shapes.items():
            if found := regex.search(visible):
                return self._action("malformed", detail, found.group(0))
        sentences = [s for s in self.sentences(FENCE.sub("\n", visible)) if WORD.search(s.match)]
        if not sentences:
            detail = ("unclosed_reasoning" if unclosed_reasoning(text) else
                      "reasoning_only" if visible != text else "no_words")
            return self._action("other", detail, "")
        pending = any(self._hit("pending_action", s.match) for s in sentences)
        readings = []
        for index, sentence in enumerate(sentences):
            following = sentences[index + 1].match if index + 1 < len(sentences) else ""
            answered = sentence.question and bool(self._hit("self_answer", following))
            readings.append((*self.read_sentence(sentence, pending, answered), sentence.text))
        best = min(readings, key=lambda reading: SENTENCE_RANK.index(reading[0]))
        if best[0] == "other":
            named = [reading for reading in readings if reading[1] != "statement"]
            best = named[0] if named else ("other", "statement", "")
        return self._action(*best)

    def read_sentence(self, sentence: Sentence, pending: bool, answered: bool) -> tuple[str, str]:
        """The (class, cue) of one sentence; `pending`: the emission states an action it is about
        to take; `answered`: the next sentence answers this question."""
        text = sentence.match
        if sentence.question and (sentence.heading or answered):
            return "other", "heading" if sentence.heading else "self_answered"
        refusal = self._hit("refuse", text)
        if offer := self._hit("offer", text) or self._hit("rhetorical", text):
            return ("refuse", refusal) if refusal else ("other", offer)
        for group, family in (("confirm_conditional", "confirm"), ("ask_conditional", "ask")):
            if cue := self._hit(group, text):
                return family, cue
        family, cue = self._read_clause(sentence, pending)
        return ("refuse", refusal) if refusal and family != "ask" else (family, cue)

    def _read_clause(self, sentence: Sentence, pending: bool) -> tuple[str, str]:
        text = sentence.match
        if not sentence.question:
            if cue := self._hit("ask_request", text):
                return "ask", cue
            if cue := self._hit("confirm_request", text):
                return "confirm", cue
            return "other", self._hit("completion", text) or "statement"
        approval = self._hit("confirm_request", text) or self._hit("confirm_question", text)
        if not approval and (cue := self._hit("tag_question", text)):
            return ("confirm" if pending else "ask"), cue
        for group in ("question_start", "choice", "ask_request"):
            if cue := self._hit(group, text):
                return "ask", cue
        return ("confirm", approval) if approval else ("ask", "question")

    def sentences(self, prose: str) -> list[Sentence]:
        """`prose` split into sentences; boundaries inside code or quotes and after an
        abbreviation are skipped."""
        protected = [match.span() for match in PROTECTED.finditer(prose)]
        pieces: list[str] = []
        start = 0
        for boundary in BOUNDARY.finditer(prose):
            head = prose[start : boundary.start()]
            inside = any(a < boundary.start() < b - 1 for a, b in protected)
            if inside or head.lower().endswith(self.abbreviations):
                continue
            pieces.append(head)
            start = boundary.end()
        pieces.append(prose[start:])
        return [self._sentence(piece) for piece in pieces if piece.strip()]

    def _sentence(self, piece: str) -> Sentence:
        text = unicodedata.normalize("NFKC", piece).translate(self.chars)
        heading = text.lstrip().startswith("#")
        text = INLINE_CODE.sub(" code ", text)
        text = QUOTED.sub(lambda m: " quote " if " " in m[0] or "?" in m[0] else m[0], text)
        match = " ".join(MARKUP.sub("", text).replace("*", "").lower().split())
        question = bool(QUESTION_END.search(match) or self.question_without_mark.search(match))
        return Sentence(" ".join(piece.split()), match, question, heading)

    def _hit(self, group: str, text: str) -> str:
        """The name of the first cue of `group` found in `text`, else ""."""
        return next((name for name, regex in self.cues[group].items() if regex.search(text)), "")

    def _action(self, family: str, detail: str, evidence: str) -> EmissionAction:
        return EmissionAction(
            action=family, rule=f"{self.name}:{family}:{detail}", evidence=evidence
        )


def _compile(table: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(regex) for name, regex in table.items()}


def unclosed_reasoning(text: str) -> bool:
    """`text` ends inside a reasoning block: its last `<think>` has no `</think>` after it."""
    lower = text.lower()
    start = lower.rfind("<think>")
    return start >= 0 and "</think>" not in lower[start:]


def strip_reasoning(text: str) -> str:
    """`text` without reasoning blocks; a `</think>` with no opening tag ends the reasoning."""
    if (close := THINK_CLOSE.search(text)) and "<think>" not in text[: close.start()].lower():
        text = text[close.end() :]
    return THINK.sub("\n", text)
