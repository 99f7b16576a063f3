"""What every classifier profile shares: the action record, the emission wrapper, turn priority."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

from toolcalib.records import ACTION_CLASSES, ActionClass, Emission, Record

MALFORMED_PREFIX = "malformed:"
"""A malformed emission's rule is this prefix plus the rule the profile's text rules chose."""


class EmissionAction(Record):
    """The class of one emission (None: nothing to classify), the deciding rule and its evidence."""

    action: ActionClass | None
    rule: str
    evidence: str = ""


EMPTY = EmissionAction(action=None, rule="empty")


class Profile(ABC):
    """A classifier profile: text rules of its own, the shared emission rules around them.

    Text rules are named `<profile>:<class>[:<detail>]`, e.g. `paper:refuse:cannot`.
    """

    name: str

    def prepare(self, emissions: Sequence[Emission]) -> None:
        """Called with the emissions about to be classified one by one: a profile that asks a
        model sends their requests here in batches; rule profiles have nothing to do."""
        return None

    @abstractmethod
    def classify_text(self, text: str) -> EmissionAction:
        """Classify a text emission that is not empty or whitespace only."""

    def classify(self, emission: Emission) -> EmissionAction:
        """Structured calls are tool_call; a malformed parse is `malformed`, never an abstention
        (its rule keeps what the text rules alone said); empty text with no calls has no class."""
        if emission.structured and emission.tool_calls:
            names = ",".join(call.name for call in emission.tool_calls)
            return EmissionAction(action="tool_call", rule="structured", evidence=names)
        by_text = self.classify_text(emission.text) if emission.text.strip() else EMPTY
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
    ranked = [a for a in actions if a.action is not None]
    return min(ranked, key=lambda a: ACTION_CLASSES.index(a.action), default=None)
