"""Was a write call confirmed? The rule-based verdict for one call, benchmark-neutral.

A write call counts as confirmed when all three hold, checked in this order (the first that
fails names the verdict's rule):

1. `default:confirm:no_request`: the agent's last text before the write (`agent_text`, chosen
   by the caller) seeks approval for an action ("Shall I cancel reservation ZFA04Y?", "... Do
   you want to proceed (yes/no)?"): the `default` profile classes it `confirm`, or would once
   the sentences that ask for information or decline something else are set aside, one at a
   time, best first (a request for approval beside "Which card should I use?" or "I can't
   cancel the other one" still seeks approval). A text that is a JSON document is read as its
   strings, one per line (agents that answer in JSON). No text, or no such sentence (an ask,
   a completion report, a refusal), fails; the evidence is the text's rule.
2. `default:confirm:details_missing`: that text, or an earlier message of the same exchange
   (`exchange`, below), names the call's key values (`key_values`), each found as a whole
   token, case-insensitively, in a text outside reasoning blocks; the evidence lists the
   missing ones.
3. `default:confirm:not_approved`: the user's reply after that text (`user_reply`) approves
   explicitly (`approves`: cue order and scope there); the evidence is the reply.

Otherwise the verdict is `default:confirm:ok`, evidence the agent's confirm sentence.

The exchange. τ²'s policy: "Before taking any action that updates the database ..., you must
list the action details and obtain explicit user confirmation (yes) to proceed." The listing
and the yes need not share a message: an agent lists the change, the user settles a detail (a
card, an option), the agent asks "Shall I proceed?". The details count where they stand in the
agent's messages to the user (assistant messages without tool calls: the text beside a tool
call never reaches τ²'s user) from the previous write call to the request
(`writes.exchange_texts`).
A write closes the exchange: an action done was approved on its own listing, so details listed
before it are not the listing of the next one. A detail only the user named, or only a tool
result shows, was not listed.

The evaluate stage hands each write a benchmark states to its run's profile as a
`WriteContext` (`writes`): the call, the conversation before it, and the texts the rule reads.
Every rule profile gives the rule's verdict (`Profile.confirm_verdicts`, `rule_verdicts`), the
texts read by the profile's `confirm_reader` (`Reader`); the `judge` profile asks its model
instead (`classify.confirm_judge`). The rule reads as the `default` profile does for every
rule profile (`paper` has no sentence split and classes the text otherwise; the verdict's rules
are `default:`'s), so `paper`'s reader is a `default` profile of its own.

Key values. With `key_args`, the candidates (below) named by one of them, every one required.
Without, every argument is read, lists and nested objects flattened (a value's name is the
innermost argument or field name holding it): strings of 3 or more characters (stripped) and
numbers (not booleans) are candidates, and the id-like ones are required: a value whose name is
`id` or ends in `_id`, `_ids`, `_number` or `_numbers`, or a string with no whitespace holding
both a letter and a digit ("ZFA04Y", "#W2378156", "HAT001", "credit_card_4421"), except values
named in `ACTOR_ARGS` (`user_id`: who acts, authenticated earlier, not a detail of the action).
When no candidate is id-like, any one candidate found suffices; a call with no candidate at all
has nothing to name. Matching: a leading `#` is optional ("order W2378156" names "#W2378156");
an id made of words and a number ("gift_card_7245904", "paypal_7644869") is also named by its
last word ("your gift card", "the card ending 1065", "PayPal"): agents name a payment method
by its kind, not its id;
a number matches its plain, integral ("120" for 120.0) or two-decimal ("12.40") spelling, not
inside a longer number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from toolcalib.classify.base import NO_CONTEXT, ConfirmVerdict
from toolcalib.classify.text import readable, strip_reasoning
from toolcalib.writes import WriteContext

if TYPE_CHECKING:
    from toolcalib.classify.base import Context, EmissionAction
    from toolcalib.records import ToolCall

ACTOR_ARGS = frozenset({"user_id"})
"""Argument names whose values are never required by default (who acts, not what is done)."""
ID_NAME = re.compile(r"(?:^|_)(?:id|ids|number|numbers)$")
MIN_CHARS = 3
PREFIXED_ID = re.compile(r"([^\W\d_]+(?:_[^\W\d_]+)*)_\d+")
"""An id made of words and a number ("credit_card_4421"), also named by its last word."""

APPROVAL = re.compile(
    r"^(?:yes|yeah|yep|yup|y|sure|ok|okay|alright|all right|absolutely|definitely|certainly"
    r"|of course|correct|confirm(?:ed)?|affirmative|please do|do it|go ahead|proceed)\b"
    r"|\b(?:yes|let's do it|i confirm|i agree|i approve|sounds good|that works|(?:that's"
    r"|that is|it's|it is|this is|everything is|all) (?:correct|right|fine|good))\b"
)
"""An explicit approval: a clause that starts with one of these, or holds one of the phrases."""
GO_AHEAD = re.compile(
    r"^(?:(?:please|yes|yeah|ok|okay|sure|alright|then|just|now)\s+)*(?:(?:i'd|i would) like"
    r" to |i want to |i'll |i will |let's |you can |you may )?(?:go ahead|proceed|please do|do it"
    r"|go for it)\b")
"""An approval by a go-ahead verb, in the imperative or chosen by the user at the start of its
clause ("please proceed", "I'd like to go ahead", "I'll proceed with ..."), not inside chatter
("so I can proceed", "if you'd like me to proceed")."""
GO_VERB = re.compile(r"\b(?:go ahead|proceed|please do|do it|go for it)\b")
NEGATION = re.compile(r"n't\b|\b(?:no|not|nope|nah|never)\b")
QUALIFIER = re.compile(
    r"\?|\b(?:cancel that|wait|hold on|hold off|stop|hmm+|maybe|perhaps|unsure|later|actually"
    r"|instead|rather|but|however|though|unless|except|also)\b")
HOLD = re.compile(f"{NEGATION.pattern}|{QUALIFIER.pattern}")
"""Anything that withholds or qualifies approval: a negation, a hesitation, a condition, a
change of plan or any question."""
NOT_NEGATION = re.compile(r"\b(?:no|not a) (?:problem|worries)\b")
"""Approving phrases that hold a negation word ("No problem, go ahead.")."""
CLAUSE = re.compile(r"[,;:]|\.\s|\s(?:and|but|so|then)\s")
BARE_NEGATION = re.compile(r"^(?:no|not|nope|nah|never)(?: \w+)?[.!]*$")
"""A clause that only negates ("not now", "no"): beside an approval, it takes it back."""
NEGATED_END = re.compile(rf"(?:{NEGATION.pattern})(?: \w+)?[.!)\]\"']*$")
RETRACTION = re.compile(
    r"^(?:(?:no|nope|nah)\b(?=\s*[,.!;]|$)|(?:wait|hold on|stop|actually|never mind"
    r"|on second thought)\b)|\b(?:changed my mind|cancel that)\b")
"""A sentence after the approval that takes it back: it opens with a retraction."""
APOSTROPHES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u00b4": "'"})


class Sentence(Protocol):
    """A sentence of a reader's split (`Reader.sentences`): its text as written."""

    @property
    def text(self) -> str: ...


class Reader(Protocol):
    """The profile that reads the texts of a write's exchange for the rule: its class of the
    agent's text (`text_action`) and its sentence split (of the agent's text and of the user's
    reply). A rule profile's `confirm_reader`: the `default` profile (whose rules the verdict's
    rules are named after) for every rule profile."""

    def text_action(self, text: str, context: Context) -> EmissionAction: ...

    def sentences(self, prose: str) -> Sequence[Sentence]: ...


def rule_verdicts(contexts: Sequence[WriteContext], reader: Reader) -> list[ConfirmVerdict]:
    """The rule-based verdict on each write (`rule_verdict`): a rule profile's
    `confirm_verdicts`, `reader` its `confirm_reader`."""
    return [rule_verdict(context, reader) for context in contexts]


def rule_verdict(context: WriteContext, reader: Reader) -> ConfirmVerdict:
    """The rule-based verdict (`confirm_verdict`) on one write's context."""
    return confirm_verdict(context.agent_text, context.user_reply, context.call, reader,
                           exchange=context.exchange)


def approves(user_text: str | None, reader: Reader) -> bool:
    """The user's reply explicitly approves, read sentence by sentence: the first sentence
    holding an approval ("yes", "go ahead", "that's correct") approves unless something
    withholds it by order and scope:

    - anything that withholds (`HOLD`: a negation, hesitation, condition, change of plan or
      question) in a sentence before it ("Will I get a refund? Yes." does not approve);
    - in its own sentence, a qualifier or question ("yes, but first ...?", "yes, maybe"), a
      clause that only negates ("Yes, not now") or a negated approval (below);
    - in a later sentence, a negated approval or a retraction opening it ("Yes. Wait, cancel
      that.", "Go ahead. No!", "Yes. Actually, use my card.").

    An approval is negated by a negation before it in its clause ("I don't want to proceed")
    or ending its clause ("Absolutely not"). Questions and requests after the approval do not
    withhold it ("Yes, go ahead. When will the refund post?"), nor does a negation of a detail
    ("Yes, book it and do not add insurance", "Yes. Insurance: no")."""
    if not user_text:
        return False
    sentences = [_normal(s.text) for s in reader.sentences(strip_reasoning(user_text))]
    sentences = [s for s in sentences if s]
    first = next((i for i, s in enumerate(sentences) if _cues(s)), None)
    if first is None or any(HOLD.search(NOT_NEGATION.sub(" ", s)) for s in sentences[:first]):
        return False
    approval, later = sentences[first], sentences[first + 1:]
    if QUALIFIER.search(approval) or any(BARE_NEGATION.match(clause) for clause in
                                         _clauses(approval)):
        return False
    return not any(_negated(s) for s in sentences[first:]) and \
        not any(RETRACTION.search(s) for s in later)


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(APOSTROPHES)
    return " ".join(text.lower().split())


def _cues(text: str) -> list[int]:
    """Where approvals start in `text`: its clauses' go-ahead verbs and approval phrases."""
    found = [m.start() for m in APPROVAL.finditer(text)]
    start = 0
    for clause in CLAUSE.split(text):
        at = text.find(clause, start)
        start = at + len(clause)
        if GO_AHEAD.match(clause.strip()):
            found.append(at)
    return sorted(found)


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in CLAUSE.split(NOT_NEGATION.sub(" ", sentence)) if c.strip()]


def _negated(sentence: str) -> bool:
    """A clause of `sentence` holds an approval or a go-ahead verb negated by a negation before
    it ("I don't want to proceed") or ending the clause ("Absolutely not")."""
    for clause in _clauses(sentence):
        cues = _cues(clause) + [m.start() for m in GO_VERB.finditer(clause)]
        negation = NEGATION.search(clause)
        if cues and negation and (negation.start() < cues[-1] or NEGATED_END.search(clause)):
            return True
    return False


def key_values(call: ToolCall, key_args: Sequence[str] | None = None) -> tuple[list[str], bool]:
    """The values the agent's message must name, and whether all of them are required (else
    any one of them suffices); see the module docstring."""
    if key_args is not None:
        wanted = set(key_args)
        return _texts(v for name, v in _leaves(call.arguments, "") if name in wanted), True
    candidates = [(name, v) for name, v in _leaves(call.arguments, "") if name not in ACTOR_ARGS]
    required = [v for name, v in candidates if _id_like(name, v)]
    if required:
        return _texts(required), True
    return _texts(v for _, v in candidates), False


def confirm_verdict(agent_text: str | None, user_reply: str | None, call: ToolCall,
                    reader: Reader, key_args: Sequence[str] | None = None,
                    exchange: Sequence[str] = ()) -> ConfirmVerdict:
    """The rule-based verdict on one write call (module docstring): `agent_text` is the
    agent's last text before the write, `user_reply` the user's message after it, `exchange`
    the agent's earlier texts of the same exchange (`writes.exchange_texts`); `reader` reads them
    (`Reader`)."""
    if not agent_text or not agent_text.strip():
        return ConfirmVerdict(False, "default:confirm:no_request", "")
    action = approval_request(agent_text, reader)
    if action.action != "confirm":
        return ConfirmVerdict(False, "default:confirm:no_request", action.rule)
    values, all_required = key_values(call, key_args)
    listed = [strip_reasoning(text).lower() for text in (agent_text, *exchange)]
    missing = [value for value in values if not any(_named(value, text) for text in listed)]
    if missing and (all_required or len(missing) == len(values)):
        return ConfirmVerdict(False, "default:confirm:details_missing", ", ".join(missing))
    if not approves(user_reply, reader):
        return ConfirmVerdict(False, "default:confirm:not_approved", user_reply or "")
    return ConfirmVerdict(True, "default:confirm:ok", action.evidence)


def approval_request(agent_text: str, reader: Reader) -> EmissionAction:
    """`reader`'s reading of the agent's text (a JSON document read as its strings), or,
    when that is an ask or a refusal, the reading once such sentences are set aside, best
    first, until a `confirm` or no ask or refusal is left (module docstring, rule 1)."""
    text = readable(strip_reasoning(agent_text))
    action = first = reader.text_action(text, NO_CONTEXT)  # the request read by itself
    sentences = [s.text for s in reader.sentences(text)]
    while action.action in ("ask", "refuse") and action.evidence in sentences:
        sentences.remove(action.evidence)
        action = reader.text_action("\n".join(sentences), NO_CONTEXT)
    return action if action.action == "confirm" else first


def _leaves(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    """(innermost name, value) of every string and number in `value`, lists and dicts opened."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item, name)
    elif isinstance(value, str):
        if len(value.strip()) >= MIN_CHARS:
            yield name, value.strip()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield name, value


def _id_like(name: str, value: Any) -> bool:
    if ID_NAME.search(name.lower()):
        return True
    return isinstance(value, str) and not re.search(r"\s", value) and \
        re.search(r"\d", value) is not None and re.search(r"[^\W\d_]", value) is not None


def _texts(values: Any) -> list[str]:
    return [value if isinstance(value, str) else _number_text(value) for value in values]


def _number_text(value: int | float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _named(value: str, text: str) -> bool:
    """`value` occurs in the lower-cased `text` as a whole token (see the module docstring)."""
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        number = float(value)
        forms = {value, f"{number:.2f}"} | ({str(int(number))} if number.is_integer() else set())
        return any(re.search(rf"(?<![\d.]){re.escape(form)}(?!\.?\d)", text) for form in forms)
    names = [value.lower().lstrip("#")]
    if kind := PREFIXED_ID.fullmatch(names[0]):
        names.append(kind.group(1).rpartition("_")[2])
    return any(re.search(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", text) for name in names)
