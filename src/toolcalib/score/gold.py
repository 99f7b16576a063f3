"""Ground-truth execution of a multi-turn case: model-independent, computed once per case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcalib.benchmarks.bfcl_release import BfclRelease
from toolcalib.execute.executor import Environment
from toolcalib.jsonio import InputError
from toolcalib.views import (
    OBJECT,
    REQUIRED,
    STR,
    STRINGS,
    BadField,
    CaseView,
    TurnsByIndex,
    View,
    field_error,
    list_of,
    parse_checked,
    view_check,
)

if TYPE_CHECKING:
    from toolcalib.records import Case, GoldTrace


def dict_of(item: Any) -> Any:
    """Check a JSON object's every value with `item`."""
    def check(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise BadField("Input should be a valid dictionary")
        for key, element in value.items():
            try:
                item(element)
            except BadField as bad:
                bad.loc.insert(0, key)
                raise
        return value
    return check


class GoldTurnView(View):
    """A `records.GoldTurn` as the checker reads it (checked as strictly, without pydantic)."""

    __slots__ = ("results", "state")

    def __init__(self, results: list[str], state: dict[str, dict[str, Any]]) -> None:
        self.results = results
        self.state = state

    FIELDS = (("results", STRINGS, list), ("state", dict_of(OBJECT), REQUIRED))
    STRICT = True


class GoldTraceView(View, TurnsByIndex):
    """A whole `records.GoldTrace` line, read when it is not laid out as `dumps` writes it."""

    __slots__ = ("case_id", "category", "turns")

    def __init__(self, case_id: str, category: str, turns: list[GoldTurnView]) -> None:
        self.case_id = case_id
        self.category = category
        self.turns = turns

    FIELDS = (("case_id", STR, REQUIRED), ("category", STR, REQUIRED),
              ("turns", list_of(view_check(GoldTurnView)), REQUIRED))
    STRICT = True


_TURN, _TRACE = view_check(GoldTurnView), view_check(GoldTraceView)
_DECODER = json.JSONDecoder()
_HEAD, _CATEGORY, _TURNS = '{"case_id":', ',"category":', ',"turns":['


class GoldLine:
    """A `records.GoldTrace` as `dumps` writes it, each turn parsed and checked when the checker
    first asks for it: a trajectory that fails in its first turn never parses the others'
    states, most of a trace's bytes (BFCL's checker likewise runs the ground truth turn by turn).
    `read_gold` parses a line laid out otherwise as a whole `GoldTrace`."""

    def __init__(self, text: str, case_id: str, category: str, offset: int, where: str):
        self.case_id, self.category = case_id, category
        self._text, self._offset, self._where = text, offset, where
        self._turns: list[GoldTurnView] = []
        self._ended = text.startswith("]", offset)

    @classmethod
    def parse(cls, text: str, where: str) -> GoldLine | None:
        """The line's case id and category, its turns left unparsed; None if it is not laid
        out as `dumps` writes a `GoldTrace`."""
        if not text.startswith(_HEAD):
            return None
        try:
            case_id, end = _DECODER.raw_decode(text, len(_HEAD))
            if not text.startswith(_CATEGORY, end):
                return None
            category, end = _DECODER.raw_decode(text, end + len(_CATEGORY))
        except json.JSONDecodeError:
            return None
        if type(case_id) is not str or type(category) is not str \
                or not text.startswith(_TURNS, end):
            return None
        return cls(text, case_id, category, end + len(_TURNS), where)

    def turn(self, index: int) -> GoldTurnView:
        while len(self._turns) <= index and not self._ended:
            self._turns.append(self._next_turn())
        if index >= len(self._turns):
            raise ValueError(f"{self.case_id}: gold trace has no turn {index}")
        return self._turns[index]

    def has_turns(self, count: int) -> bool:
        if count:
            try:
                self.turn(count - 1)
            except ValueError:
                return False
        return self._ended and len(self._turns) == count

    def _next_turn(self) -> GoldTurnView:
        number = len(self._turns)
        try:
            raw, end = _DECODER.raw_decode(self._text, self._offset)
        except json.JSONDecodeError as exc:
            raise InputError(f"{self._where}: field 'turns.{number}': not valid JSON"
                             f" ({exc.msg} at column {exc.colno})") from exc
        try:
            turn = _TURN(raw)
        except BadField as bad:
            bad.loc[:0] = ["turns", number]
            raise field_error(self._where, bad, GoldTurnView) from None
        if self._text.startswith(",", end):
            self._offset = end + 1
        elif self._text[end:].rstrip() == "]}":
            self._ended = True
        else:
            raise InputError(f"{self._where}: field 'turns': not valid JSON after turn {number}")
        return turn


def read_gold(path: str | Path) -> dict[str, GoldTraceView | GoldLine]:
    """Each gold trace of a file by case id, its turns parsed when the checker reaches them."""
    golds: dict[str, GoldTraceView | GoldLine] = {}
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.isspace():  # as `strip()`, without copying a long line
                where = f"{path}:{number}"
                gold = GoldLine.parse(text, where) or parse_trace(text, where)
                golds[gold.case_id] = gold
    return golds


def parse_trace(text: str, where: str) -> GoldTraceView:
    """A whole gold line, checked as a `records.GoldTrace`."""
    return parse_checked(text, GoldTraceView, where, _TRACE)


def case_environment(case: Case | CaseView, release: BfclRelease) -> Environment:
    """A fresh environment built from the case's `initial_config`."""
    env = case.environment
    return Environment(
        release, env["involved_classes"], env["initial_config"], bool(env["long_context"])
    )


def gold_trace(case: Case, release: BfclRelease) -> GoldTrace:
    """Run every turn's ground-truth calls on one environment that persists across turns."""
    from toolcalib.records import GoldTrace, GoldTurn

    environment = case_environment(case, release)
    turns = []
    for turn in case.turns:
        results = environment.execute_all(turn.gold_calls)
        turns.append(GoldTurn(results=results, state=environment.state()))
    return GoldTrace(case_id=case.id, category=case.category, turns=turns)
