"""What every classifier profile shares: the action record, the emission's context, the
emission wrapper, turn priority, and what a profile answers about a write (`ConfirmVerdict`;
asked about a `writes.WriteContext`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
import yaml

from toolcalib.records import ACTION_RANK, ActionClass

if TYPE_CHECKING:
    from toolcalib.records import Emission
    from toolcalib.writes import WriteContext

MALFORMED_PREFIX = "malformed:"
"""A malformed emission's rule is this prefix plus the rule the profile's text rules chose."""


class Context(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the model saw at the turn of an emission (the turn's opening; the conversation
    before it is not here): the input a profile may read an emission against
    (`Profile.classify`; built by `classify.trajectory.turn_contexts`).

    Only what was sent to the model, after the variant's changes: never a gold class, a
    category or anything else of the benchmark's. Whether the emission's own text was recorded
    is the emission's (`Emission.text_recorded`), not the context's: one fact, one place.
    """

    user: tuple[str, ...] = ()
    """The user message(s) that opened the turn (BFCL: the case turn's user messages; τ²: the
    simulated user's message, `TurnTrace.user`); a variant probe's message within the turn is
    the harness's, not the user's, and is not here."""
    tools: tuple[str, ...] = ()
    """The names of the tools offered at the turn, in order (none under a variant that hides
    them)."""


NO_CONTEXT = Context()
"""The context of an emission read alone: no user message, no tools known (a hand-written
corpus row; a caller that reads an agent's text by itself, e.g. the reference user)."""


class EmissionAction(NamedTuple):
    """The class of one emission (None: nothing to classify), the deciding rule and its evidence."""

    action: ActionClass | None
    rule: str
    evidence: str = ""


EMPTY = EmissionAction(action=None, rule="empty")
UNRECORDED = EmissionAction(action="unknown", rule="unrecorded")
"""A step without structured calls whose output the record did not keep
(`Emission.text_recorded` False): its class cannot be read, in any profile."""


@dataclass(frozen=True)
class ConfirmVerdict:
    """Whether a write was confirmed, the deciding rule and its evidence."""

    confirmed: bool
    rule: str
    evidence: str


DATA_DIR = Path(__file__).resolve().parent.parent / "data"
"""The package's data files (`importlib.resources` would cost 10 ms of start-up to find them)."""


def packaged_yaml(name: str) -> Any:
    """A data file of the package (`data/<name>`), loaded as `yaml.safe_load` loads it, by
    libyaml when PyYAML has it (10x faster; a test checks the two agree on every data file)."""
    text = (DATA_DIR / name).read_text("utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


class Profile(ABC):
    """A classifier profile: text rules of its own, the shared emission rules around them.

    Text rules are named `<profile>:<class>[:<detail>]`, e.g. `paper:refuse:cannot`.
    """

    name: str
    _known: dict[tuple[str, Hashable], EmissionAction]
    """`text_action`'s cache, made at its first call."""

    def prepare(self, emissions: Sequence[Emission]) -> None:
        """Called with the emissions about to be classified one by one: a profile that asks a
        model sends their requests here in batches; rule profiles have nothing to do."""
        return None

    def confirm_verdicts(self, contexts: Sequence[WriteContext]) -> list[ConfirmVerdict]:
        """Was each write confirmed? Rule profiles: the rule-based verdict, their text read by
        their `confirm_reader` (`classify.confirm.rule_verdicts`); the judge profile asks its
        model. A profile that says nothing of writes raises `NotImplementedError`."""
        raise NotImplementedError(f"profile '{self.name}' gives no confirm verdict")

    def summary(self) -> str | None:
        """What the profile did, for a stage's log (rule profiles: nothing to tell)."""
        return None

    def reads(self, context: Context) -> Hashable:
        """What of `context` the profile's text rules read (the key `text_action` caches on
        beside the text): nothing here; a profile that reads the context says what."""
        return None

    def text_action(self, text: str, context: Context) -> EmissionAction:
        """`classify_text`, computed once per distinct text and `reads(context)` of the
        profile's lifetime (a run): a text's class is a function of the text and of what the
        rules read of its context, and runs repeat texts ("Done.")."""
        try:
            known = self._known
        except AttributeError:
            known = self._known = {}
        key = (text, self.reads(context))
        action = known.get(key)
        if action is None:
            action = known[key] = self.classify_text(text, context)
        return action

    @abstractmethod
    def classify_text(self, text: str, context: Context) -> EmissionAction:
        """Classify a text emission that is not empty or whitespace only, in its context."""

    def classify(self, emission: Emission, context: Context) -> EmissionAction:
        """Structured calls are tool_call; an output the record did not keep is `unknown`; a
        malformed parse is `malformed`, never an abstention (its rule keeps what the text rules
        alone said); empty text with no calls has no class. `context`: what the model saw at
        the emission's turn (`NO_CONTEXT` where nothing is known)."""
        if emission.structured and emission.tool_calls:
            names = ",".join(call.name for call in emission.tool_calls)
            return EmissionAction(action="tool_call", rule="structured", evidence=names)
        if not emission.text_recorded:
            return UNRECORDED
        by_text = self.text_action(emission.text, context) if emission.text.strip() else EMPTY
        if emission.parse == "malformed":
            return EmissionAction(
                action="malformed", rule=MALFORMED_PREFIX + by_text.rule, evidence=by_text.evidence
            )
        return by_text


def text_class(action: EmissionAction) -> str | None:
    """The class the text rules alone gave; for a malformed emission it is read from the rule."""
    if action.action != "malformed":
        return action.action
    inner = action.rule.removeprefix(MALFORMED_PREFIX)
    return None if inner == EMPTY.rule else inner.split(":")[1]


def turn_action(actions: Iterable[EmissionAction]) -> EmissionAction | None:
    """The deciding emission of a turn: the first with the highest-priority class, if any."""
    best, best_rank = None, len(ACTION_RANK)
    for action in actions:
        if action.action is not None and ACTION_RANK[action.action] < best_rank:
            best, best_rank = action, ACTION_RANK[action.action]
    return best
