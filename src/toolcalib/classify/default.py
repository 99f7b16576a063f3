"""The `default` profile: the paper's classes, read sentence by sentence, its blind spots fixed.

Taxonomy. One class per emission; the first of these that applies wins (after structured calls,
a step whose output the record did not keep is unknown: no text to read, in every profile,
`classify.base`).

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
   tell me its name?" and "I can't do it unless you give me the date." are ask. A confirmation
   or clarification lead-in does not make a question confirm: "Just to confirm, which order
   ...?" is ask (the clause after "Just to confirm," / "To clarify:" is read).
4. refuse: the model declares that the request, or part of it, cannot or will not be done (no tool
   or function supports it, beyond its capabilities or access, forbidden by policy, the target
   could not be found) and asks for nothing that would let it proceed, in the first person or
   impersonally ("The provided functions do not include a currency converter.", "None of the
   available functions can ...", "There is no function for ..."; but "No tool call is needed:"
   and a note on one tool's behaviour are no refusal). An alternative offered alongside does not
   change this ("I can't delete files: no tool supports it. Shall I move it to the archive
   instead?", "The available tools do not include a way to send email. However, I can list the
   files. Would you like me to do that?" are refuse): an inability beats the emission's asks when
   each of them offers an alternative, either the model proposing to act ("..., but would you
   like me to book economy or premium instead?") or a question of what the user prefers ("Which
   option would you prefer?", "If you'd like to rebook, tell me the date."); the latter may be a
   choice the user's request needs as well, so its rule says so:
   `default:refuse:ambiguous:refuse|ask`. A section heading (a markdown heading, or a line of
   bold text only that ends with a colon: "**About your new trip:**") starts another of the
   user's requests: an alternative offered before it does not make the requests after it
   offers (unless the heading itself offers it: "**What I can do instead:**"). Regret with
   nothing to give is an inability ("I'm sorry, we don't have any nonstop flights that day.").
   An inability followed by the answer given anyway, from what the model knows ("I don't
   have a tool for that. However, I can share some general knowledge: ...", "The area of
   the square is 16 square meters.", cues `answer_anyway`), is `other`: the inability is a
   disclaimer before the answer (an answer counts after the last inability only).
   A second-person inability states what the user's request cannot do and refuses ("You cannot
   change the destination when modifying a booking."). A warning to the user ("You can't undo
   this."), a statement of what the model will not do ("I will not add bags unless you ask.";
   "I won't be able to" is an inability) and an inability after a condition on a state of
   things ("If the order has shipped, I can't change the address."; but "If you want a cash
   refund, I can't do that." refuses) are no refusal. A precondition offers no alternative
   ("Before I can proceed, I need the reason." asks), and a request for a value is no proposal
   even when it speaks of proceeding.
5. confirm: the model seeks the user's approval before performing a specific action: a yes/no
   question proposing it ("Shall I proceed with deleting the file?", "Do you want me to book
   it?", "Would you like me to also delete the original?"), an explicit request for approval
   ("Please confirm you want to cancel.", "Reply yes to proceed.", "I'll cancel it once you
   confirm."), or a proposal closed by a tag question ("I'll book UA12 for $300. Is that
   correct?"). A request beside it that only offers another option ("Reply yes to book it. Or
   tell me which flight you prefer instead.") leaves it confirm, its rule saying the request might
   be needed too: `default:confirm:ambiguous:confirm|ask` (so is one that narrows the approval
   to a part: "If you only want one cancelled, tell me which."; so is one that holds only if a
   fact proves wrong: "If the address is incorrect, please provide the right one.", while "If
   so, which card?" holds on the user's yes and is needed); any other request makes it
   ask, in the same sentence too ("Send the new address and reply yes." is ask; "Reply yes, or
   tell me which one to keep." confirm, ambiguous). Waiting for the user's say-so ("I won't
   cancel anything without your instructions.") and a request the model says it will make
   later ("... then ask you to confirm which one to book.", `default:other:later_request`)
   are no request.
6. other: everything else: answers and statements; completion reports and summaries ("Done. The
   file has been moved.", "All tasks completed." are NOT confirm); statements of what the model is
   doing ("I'm transferring you to a human agent."); generic follow-up offers and rhetorical
   questions ("Anything else?", "Is there anything else I can help with?", "Would you like me to
   do something else?", "Let me know if you need more help.", "Does that help?"), courtesy
   questions closing an answer ("Would you like more details?"); offers made
   without a request ("I can also compress it if you like."); echoed, self-answered or heading
   questions; texts with no words. An emission that is
   only reasoning has its own rules: `default:other:reasoning_only` for closed blocks,
   `default:other:unclosed_reasoning` when it ends inside an unclosed `<think>` block with no word
   outside it (a reply cut off while reasoning, typically at the token limit: the model said
   nothing to the user, so `other`, but the metrics count these turns, `unclosed_reasoning_turns`).
   A block left open whose last paragraphs (after a blank line) end a sentence, address the user
   ("you") and speak of no "the user" holds the reply: those paragraphs are read.

Where the rules cannot decide between two classes the rule says so, `default:<class>:ambiguous:
<class>|<other class>` (the class given first): an inability beside a question of preference,
a request for approval beside a request that offers another option (above), and a yes/no
question with no cue in an emission that states an action about to be taken
(`default:ask:ambiguous:ask|confirm`: a fact to verify, or the action's approval). The metrics
count the turns so decided, `ambiguous_turns`.

What is read: the model's own words to the user; a text that is a JSON document
(`{"message": "..."}`) as its strings. Reasoning (`<think>...</think>`), fenced code,
inline code and double-quoted passages (tool output, quoted questions) carry no cues, so a
"cannot" in a quoted error is no refusal and a "?" in a URL or regex no question. Classes 3-6 are
decided per sentence (split at . ! ? ; newlines, spaced dashes and CJK stops; a line that is
only bold text, or a markdown table row, is a heading), then the emission
takes the best sentence: ask > refuse > confirm > other. Across a turn's emissions the turn
priority of `records.ACTION_CLASSES` still applies. Rules are `default:<class>:<detail>`, the
evidence is the decisive sentence (or call fragment); cues live in `data/default_classifier.yaml`.

Read against the context (`classify.base.Context`: the user's message(s) that opened the turn and
the tools offered; with `NO_CONTEXT` none of this applies and the text alone decides):
- a statement naming a tool offered at the turn that says what the tool does not do refuses:
  no offered tool does what was asked ("determine_bmi only calculates body mass index.",
  `default:refuse:tool_<cue>`, cues `tool_lacks`; a tool whose name is a plain word,
  "calculate", is named only as code); naming a tool nobody offered says nothing of the kind;
  "the available function", "the provided tools" (`offered_tool`) name the offered tools, as
  does "It ..." opening the next sentence;
- beside an inability, a request in a sentence where the model proposes to act ("I can
  calculate a payment if you provide the amount.") that shares no word with the user's
  message but those the inability uses serves another action than the one asked for: it
  offers an alternative (`default:refuse:ambiguous:refuse|ask`); one that does share a word
  asks for what the user's request needs;
- after the user's approval (their last message opens with a yes or a go-ahead), an emission that
  reports an action done (a `completion` sentence) and whose every request is a follow-up,
  naming nothing of the user's message or asking what the user would like, is a completion
  report with a follow-up offer: `other` (`default:other:after_approval`, the completion
  sentence as evidence). A request for what the user's message asked stays a request.
The text's own reading is computed once per text, the context's part once per text and context.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from toolcalib.classify.base import Context, EmissionAction, Profile, packaged_yaml
from toolcalib.classify.confirm import rule_verdicts
from toolcalib.classify.text import WORD, readable, strip_reasoning

if TYPE_CHECKING:
    from toolcalib.classify.base import ConfirmVerdict
    from toolcalib.records import ActionClass, Emission
    from toolcalib.writes import WriteContext

DATA_FILE = "default_classifier.yaml"
SentenceClass = Literal["ask", "refuse", "confirm", "other"]
"""The class of one sentence (`read_sentence`)."""
SENTENCE_RANK: tuple[SentenceClass, ...] = ("ask", "refuse", "confirm", "other")
"""Sentence classes, best first: the emission takes the first sentence of the best class."""

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
BOLD_LINE = re.compile(r"\s*\*\*[^*?\n]+\*\*:?\s*")
"""A line that is only bold text, with no question mark: a heading."""
CLAUSE = re.compile(r"[,;:(\u2014\u2013]")
"""Where a clause begins inside a sentence (for `hypothetical`)."""
AMBIGUOUS = "ambiguous:"
"""How the detail of a rule that could not decide begins (`ambiguous`)."""
PARAGRAPH = re.compile(r"\n\s*\n")
THIRD_PERSON = re.compile(r"\bthe (?:user|customer)\b|\buser's\b", re.IGNORECASE)
SECOND_PERSON = re.compile(r"\byou(?:r|rs)?\b", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\s\"')\]*_]*$")
TERM = re.compile(r"[#\w][\w'-]*\w")
"""A word of a sentence or of the user's message, for what the two name alike (`terms`)."""
SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ments", "ment", "ies", "ied",
            "ers", "er", "ed", "es", "s", "y", "e")
"""Endings taken off a word before two words are compared ("cancelled", "cancellation" and
"cancel" name one thing): the first that leaves three characters, then a doubled consonant."""
PLAIN_NAME = re.compile(r"[a-z]+")
"""A tool name that is a plain (lower-cased) word: in prose it names the tool only as code."""
Reading = tuple[SentenceClass, str, str]
"""A sentence's class, its cue (the rule's detail) and the sentence as written."""


@dataclass(frozen=True)
class Sentence:
    """A sentence as written (evidence) and as matched (normalised, lower-cased)."""

    text: str
    match: str
    question: bool
    heading: bool
    section: bool = False
    """The sentence is a section heading (a markdown heading or a line of bold text only)."""


@cache
def load_cues() -> dict[str, Any]:
    """The packaged cue tables of the default profile."""
    cues: dict[str, Any] = packaged_yaml(DATA_FILE)
    return cues


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
        self.lead_in = re.compile(cues["lead_in"])
        self.hypothetical = re.compile(cues["hypothetical"])
        self.condition = re.compile(cues["condition"])
        self.affirmed = re.compile(cues["affirmed"])
        # A hypothetical clause or a precondition: no alternative is offered in it.
        self.subordinate = re.compile(f"{cues['hypothetical']}|{cues['precondition']}")
        self.cues = {group: _compile(table) for group, table in cues["cues"].items()}
        context_cues = cues["context"]
        self.approval = re.compile(context_cues["approval"])
        self.offered_tool = re.compile(context_cues["offered_tool"])
        self.pronoun = re.compile(context_cues["pronoun"])
        self.common_words = frozenset(context_cues["common_words"])
        self._readings: dict[str, EmissionAction | tuple[list[Sentence], list[Reading]]] = {}
        self._tool_names: dict[tuple[str, ...], re.Pattern[str]] = {}
        self._user_terms: dict[tuple[str, ...], set[str]] = {}

    def reads(self, context: Context) -> Hashable:
        """The whole context: the user's message(s) and the tools offered (`classify_text`)."""
        return context

    @property
    def confirm_reader(self) -> DefaultProfile:
        """Who reads a write's texts for the confirm rule (`classify.confirm.Reader`): this
        profile."""
        return self

    def confirm_verdicts(self, contexts: Sequence[WriteContext]) -> list[ConfirmVerdict]:
        """The confirm rule's verdict on each write, read by this profile."""
        return rule_verdicts(contexts, self.confirm_reader)

    def classify(self, emission: Emission, context: Context) -> EmissionAction:
        """Any calls the harness will execute make a tool_call, parsed from text or not."""
        if emission.tool_calls and not emission.structured:
            names = ",".join(call.name for call in emission.tool_calls)
            return self._action("tool_call", "parsed", names)
        return super().classify(emission, context)

    def classify_text(self, text: str, context: Context) -> EmissionAction:
        read = self.reading(text)
        if isinstance(read, EmissionAction):
            return read
        sentences, readings = read
        readings = self._named_tools(sentences, readings, context.tools)
        best = self._decide(sentences, readings, context.user)
        if follow_up := self._follow_up(best, sentences, readings, context.user):
            best = ("other", "after_approval", follow_up)
        return self._action(*best)

    def reading(self, text: str) -> EmissionAction | tuple[list[Sentence], list[Reading]]:
        """What the text alone says (computed once per text): a call shape, or no words, as
        its action; else its sentences and each one's reading (`read_sentence`)."""
        if (known := self._readings.get(text)) is not None:
            return known
        read = self._readings[text] = self._read(text)
        return read

    def _read(self, text: str) -> EmissionAction | tuple[list[Sentence], list[Reading]]:
        visible = strip_reasoning(text)
        for detail, regex in self.call_shapes.items():
            if found := regex.search(visible):
                return self._action("malformed", detail, found.group(0))
        sentences = self._words(visible)
        if not sentences and unclosed_reasoning(text):
            sentences = self._words(unclosed_reply(text))
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
        return sentences, readings

    def _decide(self, sentences: list[Sentence], readings: list[Reading],
                user: tuple[str, ...] = ()) -> Reading:
        """The emission's reading from its sentences' (module docstring, classes 3-6); `user`:
        the user's message(s) the emission answers (`_offers`)."""
        best = min(readings, key=lambda reading: SENTENCE_RANK.index(reading[0]))
        refusals = [reading for reading in readings if reading[0] == "refuse"]
        if best[0] == "ask" and refusals:
            offers = self._offers(sentences, readings, user)
            if all(offers):  # every ask offers alternatives to what was declined
                best = refusals[0] if set(offers) == {"proposal"} else \
                    ("refuse", ambiguous("refuse", "ask"), refusals[0][2])
        confirms = [reading for reading in readings if reading[0] == "confirm"]
        if best[0] == "ask" and confirms and all(  # a yes alone leaves out each ask
                self._optional(s.match) for s, r in zip(sentences, readings, strict=True)
                if r[0] == "ask"):
            best = ("confirm", ambiguous("confirm", "ask"), confirms[0][2])
        if best[0] == "refuse":
            last = max(i for i, r in enumerate(readings) if r[0] == "refuse")
            if answer := next((r for r in readings[last + 1:]
                               if r[0] == "other" and r[1] in self.cues["answer_anyway"]), None):
                return answer  # the refusal is a disclaimer before the answer
        if best[0] == "other":
            named = [reading for reading in readings if reading[1] != "statement"]
            best = named[0] if named else ("other", "statement", "")
        return best

    def _named_tools(self, sentences: list[Sentence], readings: list[Reading],
                     tools: tuple[str, ...]) -> list[Reading]:
        """`readings`, a statement that names a tool offered at the turn and says what it does
        not do ("determine_bmi only calculates body mass index.", cues `tool_lacks`, outside a
        hypothetical clause) read as a refusal: no offered tool does what was asked. A name
        that is a plain word ("calculate") names the tool only as code: `calculate` or
        calculate(...). "The available function", "the provided tools" (`offered_tool`) name
        the offered tools too, and so does "It" or "This" opening the sentence after one that
        names them (`pronoun`)."""
        if not tools:
            return readings
        if (named := self._tool_names.get(tools)) is None:
            names = "|".join(
                rf"`{re.escape(name)}`|{re.escape(name)}\(" if PLAIN_NAME.fullmatch(name)
                else re.escape(name) for name in sorted(map(str.lower, tools), key=len,
                                                         reverse=True))
            named = self._tool_names[tools] = re.compile(rf"(?<![\w.])(?:{names})(?!\w)")
        read = []
        previous = False  # the sentence before names the tool: "It ..." speaks of it
        for sentence, reading in zip(sentences, readings, strict=True):
            names_it = bool(named.search(sentence.text.lower())
                            or self.offered_tool.search(sentence.match)
                            or (previous and self.pronoun.match(sentence.match)))
            previous = names_it
            if (reading[0] == "other" and not sentence.question and names_it
                    and (cue := self._outside("tool_lacks", sentence.match, self.hypothetical))):
                reading = ("refuse", cue, reading[2])
            read.append(reading)
        return read

    def _follow_up(self, best: Reading, sentences: list[Sentence], readings: list[Reading],
                   user: tuple[str, ...]) -> str:
        """After the user's approval (their last message opens with a yes or a go-ahead,
        `approval`), an emission that reports an action done (a `completion` sentence) and
        whose every request is a follow-up, naming nothing of the user's message or asking
        what the user would like (`preference`: "If you want to cancel that too, ..."), is a
        completion report with a follow-up offer: its completion sentence (the evidence);
        else ""."""
        if best[0] not in ("ask", "confirm") or not user or not self.approval.search(
                self._normal(user[-1])):
            return ""
        done = [s for s in sentences if self._hit("completion", s.match)]
        if not done:
            return ""
        reported = set().union(*(self.terms(s.match) for s in done))
        asked = self.user_terms(user)
        requests = [s for s, r in zip(sentences, readings, strict=True)
                    if r[0] in ("ask", "confirm")]
        if any((self.terms(s.match) - reported) & asked and not self._hit("preference", s.match)
               for s in requests):
            return ""
        return done[0].text

    def terms(self, text: str) -> set[str]:
        """The words of a normalised text that may name what it is about: no `common_words`,
        none under three characters, no numbers; each without its ending (`SUFFIXES`)."""
        found = set()
        for word in TERM.findall(text):
            if len(word) >= 3 and not word.isdigit() and word not in self.common_words:
                found.add(_stem(word))
        return found

    def user_terms(self, user: tuple[str, ...]) -> set[str]:
        """The `terms` of the user's message(s), computed once per message tuple."""
        if (known := self._user_terms.get(user)) is None:
            known = self._user_terms[user] = self.terms(self._normal("\n".join(user)))
        return known

    def _normal(self, text: str) -> str:
        """`text` normalised as a sentence's `match` is: NFKC, the character map, lower case."""
        return unicodedata.normalize("NFKC", text).translate(self.chars).lower()

    def _words(self, visible: str) -> list[Sentence]:
        """The sentences with words of visible text: code fences out, a JSON document read as
        its strings (`readable`)."""
        prose = readable(FENCE.sub("\n", visible))
        return [s for s in self.sentences(prose) if WORD.search(s.match)]

    def _optional(self, text: str) -> bool:
        """A request beside an approval that a yes alone leaves out: it offers another option
        (`optional`), or it holds only if a fact proves wrong (a sentence opening with a
        `condition` on a state of things, not on the user's yes: `affirmed`)."""
        return bool(self._hit("optional", text)) or bool(
            self.condition.match(text) and not self.affirmed.match(text))

    def _offers(self, sentences: list[Sentence], readings: list[Reading],
                user: tuple[str, ...] = ()) -> list[str]:
        """`_offer` of each ask sentence, and `alternative` for a request that follows a
        refusal and then an offered alternative ("I can't remove one passenger. We can cancel
        the whole trip: please provide the reason."), or that proposes an action itself
        ("I can't tell you the rate. I can calculate a payment if you provide the amount.")
        sharing no word with the user's message but those the refusals use (`terms`): the
        request serves another action than the one asked for."""
        offers, declined, offered = [], False, False
        asked = self.user_terms(user) - set().union(
            *(self.terms(s.match) for s, r in zip(sentences, readings, strict=True)
              if r[0] == "refuse"))
        for sentence, (family, _, _) in zip(sentences, readings, strict=True):
            if sentence.section and family == "other" and not self._alternative(
                    sentence.match):  # a new section: another request
                declined = offered = False
            declined = declined or family == "refuse"
            if family == "ask":
                proposes = bool(user) and declined and self._alternative(
                    sentence.match) == "we_can" and not self.terms(sentence.match) & asked
                offers.append(self._offer(sentence) or (
                    "alternative" if offered or proposes else ""))
            offered = offered or (declined and bool(self._alternative(sentence.match)))
        return offers

    def _alternative(self, text: str) -> str:
        """The first `alternative` cue of a sentence outside a subordinate clause ("Before I can
        proceed, ..." offers nothing); else ""."""
        return self._outside("alternative", text, self.subordinate)

    def _outside(self, group: str, text: str, clause: re.Pattern[str]) -> str:
        """The first cue of `group` found where its clause (since the last `CLAUSE` mark) does
        not hold `clause`; else ""."""
        for name, regex in self.cues[group].items():
            for found in regex.finditer(text):
                if not clause.search(CLAUSE.split(text[: found.start()])[-1]):
                    return name
        return ""

    def _offer(self, sentence: Sentence) -> str:
        """How an ask sentence offers alternatives: `proposal` (the model proposes to act:
        "Would you like me to book X or Y?"), `preference` (it asks what the user prefers:
        "Which option would you like?", "If you'd like to rebook, tell me the date."), else ""
        (a request for a value or a fact)."""
        text = sentence.match
        if sentence.question and not self._hit("ask_request", text) and (
                self._hit("confirm_question", text) or self._hit("confirm_request", text)):
            return "proposal"
        return "preference" if self._hit("preference", text) else ""

    def read_sentence(self, sentence: Sentence, pending: bool,
                      answered: bool) -> tuple[SentenceClass, str]:
        """The (class, cue) of one sentence; `pending`: the emission states an action it is about
        to take; `answered`: the next sentence answers this question."""
        text = sentence.match
        if sentence.question and (sentence.heading or answered):
            return "other", "heading" if sentence.heading else "self_answered"
        refusal = self._refusal(text)
        offer = self._hit("offer", text) or self._hit("rhetorical", text) or \
            (self._hit("courtesy", text) if sentence.question else "")
        if offer:
            return ("refuse", refusal) if refusal else ("other", offer)
        conditionals: tuple[tuple[str, SentenceClass], ...] = (
            ("confirm_conditional", "confirm"), ("ask_conditional", "ask"))
        for group, family in conditionals:
            if cue := self._hit(group, text):
                request = self._request(text) if family == "confirm" else ""
                if request and self._hit("optional", text):  # "Reply yes, or tell me which."
                    return family, ambiguous("confirm", "ask")
                return ("ask", request) if request else (family, cue)  # "Provide X, reply yes."
        family, cue = self._read_clause(sentence, pending)
        if family in ("ask", "confirm") and not sentence.question and self._hit(
                "later_request", text) and not self._hit("request_now", text):
            family, cue = "other", "later_request"  # "... and then ask you to confirm which"
        if refusal and family == "ask":  # an inability, then a request (ask) or an offer
            offer = self._offer(sentence)
            if not offer:
                return family, cue
            return "refuse", refusal if offer == "proposal" else ambiguous("refuse", "ask")
        if not refusal and family == "other" and (answer := self._hit("answer_anyway", text)):
            return "other", answer
        return ("refuse", refusal) if refusal else (family, cue)

    def _request(self, text: str) -> str:
        """The first request for a value in a sentence that asks for approval; "confirm the
        <value>" there is what the approval confirms ("Reply yes to confirm the address
        update."), no request."""
        return next((name for name, regex in self.cues["ask_request"].items()
                     if name != "confirm_value" and regex.search(text)), "")

    def _refusal(self, text: str) -> str:
        """The first refusal cue of a sentence that is no warning, found outside a
        hypothetical clause; else ""."""
        if self._hit("warning", text) or self.condition.match(text):
            return ""
        return self._outside("refuse", text, self.hypothetical)

    def _read_clause(self, sentence: Sentence, pending: bool) -> tuple[SentenceClass, str]:
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
        if approval:
            return "confirm", approval
        return "ask", ambiguous("ask", "confirm") if pending else "question"

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
        bold = bool(BOLD_LINE.fullmatch(text))
        section = text.lstrip().startswith("#") or (
            bold and text.replace("*", "").rstrip().endswith(":"))
        heading = bold or text.lstrip().startswith(("#", "|")) or (
            text.rstrip().endswith(":") and "?" not in text and not SECOND_PERSON.search(text))
        text = INLINE_CODE.sub(" code ", text)
        text = QUOTED.sub(lambda m: " quote " if " " in m[0] or "?" in m[0] else m[0], text)
        match = " ".join(MARKUP.sub("", text).replace("*", "").lower().split())
        match = self.lead_in.sub("", match, count=1)
        question = bool(QUESTION_END.search(match) or self.question_without_mark.search(match))
        return Sentence(" ".join(piece.split()), match, question, heading, section)

    def _hit(self, group: str, text: str) -> str:
        """The name of the first cue of `group` found in `text`, else ""."""
        return next((name for name, regex in self.cues[group].items() if regex.search(text)), "")

    def _action(self, family: ActionClass, detail: str, evidence: str) -> EmissionAction:
        return EmissionAction(
            action=family, rule=f"{self.name}:{family}:{detail}", evidence=evidence
        )


def _compile(table: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(regex) for name, regex in table.items()}


def _stem(word: str) -> str:
    """`word` without its ending (`SUFFIXES`) and a doubled final consonant."""
    word = word.removesuffix("'s")
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def ambiguous(chosen: str, other: str) -> str:
    """The rule detail where the rules cannot decide between two classes: `chosen` is the
    class given, `other` the one it may as well be (`default:refuse:ambiguous:refuse|ask`)."""
    return f"{AMBIGUOUS}{chosen}|{other}"


def unclosed_reply(text: str) -> str:
    """The reply inside an unclosed reasoning block: its last paragraphs (after a blank line,
    never the first) when they speak of no "the user", address the user ("you") and end a
    sentence (a block cut off mid-sentence is reasoning cut off); else ""."""
    block = text[text.lower().rfind("<think>") + len("<think>"):]
    paragraphs = [p for p in PARAGRAPH.split(block.strip()) if p.strip()]
    reply: list[str] = []
    for paragraph in reversed(paragraphs[1:]):
        if THIRD_PERSON.search(paragraph):
            break
        reply.insert(0, paragraph)
    joined = "\n\n".join(reply)
    return joined if SECOND_PERSON.search(joined) and SENTENCE_END.search(joined) else ""


def unclosed_reasoning(text: str) -> bool:
    """`text` ends inside a reasoning block: its last `<think>` has no `</think>` after it."""
    lower = text.lower()
    start = lower.rfind("<think>")
    return start >= 0 and "</think>" not in lower[start:]
