"""Class vocabularies, and plain views of the records `evaluate` reads: standard library only.

The `evaluate` stage reads case and trajectory lines as these slotted classes instead of the
pydantic records of `records.py`, so its process never imports pydantic (about a third of its
start-up). A view keeps the fields classify and score read: a case without function docs,
messages and source (`CaseView`), a trajectory without the conversation and the model's identity
(`TrajectoryView`); every function that takes a view also takes the record itself.

What a view keeps is checked as the records check it, but exactly (no coercion: `"1"` is no int,
`1` no bool): required fields present, types and literal values right, and no unknown field inside
the strict parts (steps, emissions, calls, turn traces, interventions). A bad line raises
`InputError` naming the file, the line and the field; the other fields of a line are not checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from toolcalib.jsonio import InputError

GoldClass = Literal["tool_call", "ask", "refuse", "confirm"]
ActionClass = Literal["tool_call", "ask", "refuse", "confirm", "other", "malformed"]
GOLD_CLASSES: tuple[str, ...] = ("tool_call", "ask", "refuse", "confirm")
ACTION_CLASSES: tuple[str, ...] = ("tool_call", "malformed", "refuse", "ask", "confirm", "other")
"""Every class, highest turn priority first (a turn takes the first class any emission has)."""

Outcome = Literal["completed", "step_cap", "error", "context_overflow"]
"""How a trajectory ended. `completed` and `step_cap` are model behaviour (step_cap is scored
as a failure, as BFCL does); `error` and `context_overflow` are infrastructure: never scored."""
OUTCOMES: tuple[str, ...] = ("completed", "step_cap", "error", "context_overflow")
MODEL_OUTCOMES: tuple[str, ...] = ("completed", "step_cap")
PARSES: tuple[str, ...] = ("none", "ok", "malformed")
"""How the harness read an emission's text (`Emission.parse`)."""
TURN_ENDS: tuple[str, ...] = ("no_call", "step_cap", "single_step", "error", "context_overflow")
"""How a turn ended (`TurnTrace.ended`)."""
ACTION_COLUMNS = ["case_id", "model", "variant", "benchmark", "category", "outcome", "scored",
                  "level", "turn", "step", "gold_action", "is_gold_turn", "action", "rule",
                  "evidence", "probes_fired"]
"""The columns of an action table, in order: the fields of `records.ActionRow`, the keys of
`classify.trajectory.action_rows`' dicts (here, so that aggregation reads action tables without
importing the classifier or the records)."""


class BadField(ValueError):
    """A value a view does not accept: `loc` is its path below the view, `message` why."""

    def __init__(self, message: str, loc: list[str | int] | None = None):
        super().__init__(message)
        self.message, self.loc = message, loc or []


class View:
    """A plain record class (a view, a score): its fields are its `__slots__`; two are equal
    when their class and fields are."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (as pydantic's `model_copy(update=...)`)."""
        return type(self)(*(changes.get(name, getattr(self, name)) for name in self.__slots__))


REQUIRED = object()
"""A field with no default."""
Check = Callable[[Any], Any]


def exact(kind: type, name: str, optional: bool = False) -> Check:
    def check(value: Any) -> Any:
        if type(value) is kind or (optional and value is None):
            return value
        raise BadField(f"Input should be a valid {name}")
    return check


def one_of(choices: tuple[str, ...]) -> Check:
    allowed = frozenset(choices)
    text = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"

    def check(value: Any) -> Any:
        if type(value) is str and value in allowed:
            return value
        raise BadField(f"Input should be {text}")
    return check


def list_of(item: Check) -> Check:
    def check(value: Any) -> list[Any]:
        if type(value) is not list:
            raise BadField("Input should be a valid list")
        index = 0
        try:
            out = []
            for index, element in enumerate(value):  # noqa: B007 - named in errors
                out.append(item(element))
            return out
        except BadField as bad:
            bad.loc.insert(0, index)
            raise
    return check


STR, INT, BOOL = exact(str, "string"), exact(int, "integer"), exact(bool, "boolean")
OPTIONAL_STR, OPTIONAL_INT = exact(str, "string", True), exact(int, "integer", True)
OBJECT = exact(dict, "dictionary")
STRINGS = list_of(STR)

V = TypeVar("V")


def view_check(cls: type[V], fast: bool = True) -> Check:
    """Checks a JSON object and builds `cls` from it: its `FIELDS` in order, each
    (name, check, default); `STRICT`: unknown keys are errors. A class's `fast(raw)` may build
    it first from an object as `dumps` writes it (every field there, every type exact; a
    trajectory without interventions), in a few checks instead of one call per field: None
    sends `raw` through the field-by-field check, which accepts all it accepts and names what
    is wrong (`fast=False`: that check alone, for tests)."""
    fields: tuple[tuple[str, Check, Any], ...] = cls.FIELDS  # type: ignore[attr-defined]
    known = frozenset(name for name, _, _ in fields)
    strict: bool = cls.STRICT  # type: ignore[attr-defined]

    build: Callable[[Any], V | None] | None = getattr(cls, "fast", None) if fast else None

    def check(raw: Any) -> V:
        if build is not None and (built := build(raw)) is not None:
            return built
        if type(raw) is not dict:
            raise BadField("Input should be a valid dictionary")
        values = []
        for name, check_value, default in fields:
            value = raw.get(name, REQUIRED)
            if value is REQUIRED:
                if default is REQUIRED:
                    raise BadField("Field required", [name])
                value = [] if default is list else {} if default is dict else default
            else:
                try:
                    value = check_value(value)
                except BadField as bad:
                    bad.loc.insert(0, name)
                    raise
            values.append(value)
        if strict and not raw.keys() <= known:  # after the fields' errors, as pydantic reports
            unknown = next(key for key in raw if key not in known)
            raise BadField("Extra inputs are not permitted", [unknown])
        return cls(*values)
    return check


class CallView(View):
    """A `ToolCall`: a function name and literal arguments."""

    __slots__ = ("name", "arguments")

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        self.name = name
        self.arguments = arguments

    FIELDS = (("name", STR, REQUIRED), ("arguments", OBJECT, dict))
    STRICT = True

    @staticmethod
    def fast(raw: Any) -> CallView | None:
        if type(raw) is dict and raw.keys() == _CALL_KEYS:
            name, arguments = raw["name"], raw["arguments"]
            if type(name) is str and type(arguments) is dict:
                return CallView(name, arguments)
        return None


CALLS = list_of(view_check(CallView))


class EmissionView(View):
    """An `Emission`: what the backend returned and what the harness made of it."""

    __slots__ = ("text", "tool_calls", "structured", "parse", "parse_error", "finish_reason",
                 "input_tokens", "output_tokens")

    def __init__(self, text: str,
                 tool_calls: list[CallView],
                 structured: bool,
                 parse: str,
                 parse_error: str | None,
                 finish_reason: str | None,
                 input_tokens: int | None,
                 output_tokens: int | None) -> None:
        self.text = text
        self.tool_calls = tool_calls
        self.structured = structured
        self.parse = parse
        self.parse_error = parse_error
        self.finish_reason = finish_reason
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    FIELDS = (("text", STR, ""), ("tool_calls", CALLS, list), ("structured", BOOL, False),
              ("parse", one_of(PARSES), "none"), ("parse_error", OPTIONAL_STR, None),
              ("finish_reason", OPTIONAL_STR, None), ("input_tokens", OPTIONAL_INT, None),
              ("output_tokens", OPTIONAL_INT, None))
    STRICT = True

    @staticmethod
    def fast(raw: Any) -> EmissionView | None:
        if type(raw) is not dict or raw.keys() != _EMISSION_KEYS:
            return None
        text, calls, structured, parse = (raw["text"], raw["tool_calls"], raw["structured"],
                                          raw["parse"])
        error, finish, tokens_in, tokens_out = (raw["parse_error"], raw["finish_reason"],
                                                raw["input_tokens"], raw["output_tokens"])
        if type(text) is not str or type(calls) is not list or type(structured) is not bool \
                or type(parse) is not str or parse not in _PARSES \
                or (error is not None and type(error) is not str) \
                or (finish is not None and type(finish) is not str) \
                or (tokens_in is not None and type(tokens_in) is not int) \
                or (tokens_out is not None and type(tokens_out) is not int):
            return None
        built = _built(CallView.fast, calls)
        if built is None:
            return None
        return EmissionView(text, built, structured, parse, error, finish, tokens_in, tokens_out)


class StepView(View):
    """A `Step`: one emission, its execution results, and whether a probe withdrew it."""

    __slots__ = ("index", "emission", "results", "dropped")

    def __init__(
        self, index: int, emission: EmissionView, results: list[str], dropped: bool
    ) -> None:
        self.index = index
        self.emission = emission
        self.results = results
        self.dropped = dropped

    FIELDS = (("index", INT, REQUIRED), ("emission", view_check(EmissionView), REQUIRED),
              ("results", STRINGS, list), ("dropped", BOOL, False))
    STRICT = True

    @staticmethod
    def fast(raw: Any) -> StepView | None:
        if type(raw) is not dict or raw.keys() != _STEP_KEYS:
            return None
        index, results, dropped = raw["index"], raw["results"], raw["dropped"]
        if type(index) is not int or type(dropped) is not bool or type(results) is not list \
                or not all(type(result) is str for result in results):
            return None
        emission = EmissionView.fast(raw["emission"])
        return None if emission is None else StepView(index, emission, results, dropped)


class TurnTraceView(View):
    """A `TurnTrace`: the steps of one turn and how it ended."""

    __slots__ = ("index", "steps", "ended", "user")

    def __init__(self, index: int, steps: list[StepView], ended: str,
                 user: str | None = None) -> None:
        self.index = index
        self.steps = steps
        self.ended = ended
        self.user = user

    FIELDS = (("index", INT, REQUIRED), ("steps", list_of(view_check(StepView)), REQUIRED),
              ("ended", one_of(TURN_ENDS), REQUIRED), ("user", OPTIONAL_STR, None))
    STRICT = True

    @staticmethod
    def fast(raw: Any) -> TurnTraceView | None:
        if type(raw) is not dict or (raw.keys() != _SCRIPTED_TRACE_KEYS
                                     and raw.keys() != _TRACE_KEYS):
            return None
        index, steps, ended, user = raw["index"], raw["steps"], raw["ended"], raw.get("user")
        if type(index) is not int or type(steps) is not list or type(ended) is not str \
                or ended not in _TURN_ENDS or (user is not None and type(user) is not str):
            return None
        built = _built(StepView.fast, steps)
        if built is None:
            return None
        return TurnTraceView(index, built, ended, user)


class InterventionView(View):
    """An `Intervention`: a variant probe's decision at one step."""

    __slots__ = ("turn", "step", "probe", "fired", "reason")

    def __init__(self, turn: int, step: int, probe: str, fired: bool, reason: str) -> None:
        self.turn = turn
        self.step = step
        self.probe = probe
        self.fired = fired
        self.reason = reason

    FIELDS = (("turn", INT, REQUIRED), ("step", INT, REQUIRED), ("probe", STR, REQUIRED),
              ("fired", BOOL, REQUIRED), ("reason", STR, REQUIRED))
    STRICT = True


class TrajectoryView(View):
    """A `Trajectory` without the conversation and the model's identity."""

    __slots__ = ("case_id", "benchmark", "category", "model", "variant", "outcome", "error",
                 "turns", "interventions", "termination")

    def __init__(self, case_id: str,
                 benchmark: str,
                 category: str,
                 model: str,
                 variant: str,
                 outcome: str,
                 error: str | None,
                 turns: list[TurnTraceView],
                 interventions: list[InterventionView],
                 termination: str | None = None) -> None:
        self.case_id = case_id
        self.benchmark = benchmark
        self.category = category
        self.model = model
        self.variant = variant
        self.outcome = outcome
        self.error = error
        self.turns = turns
        self.interventions = interventions
        self.termination = termination

    FIELDS = (("case_id", STR, REQUIRED), ("benchmark", STR, REQUIRED),
              ("category", STR, REQUIRED), ("model", STR, REQUIRED), ("variant", STR, REQUIRED),
              ("outcome", one_of(OUTCOMES), REQUIRED), ("error", OPTIONAL_STR, None),
              ("turns", list_of(view_check(TurnTraceView)), REQUIRED),
              ("interventions", list_of(view_check(InterventionView)), list),
              ("termination", OPTIONAL_STR, None))
    STRICT = False

    @staticmethod
    def fast(raw: Any) -> TrajectoryView | None:
        if type(raw) is not dict:
            return None
        get = raw.get
        case_id, benchmark, category, model, variant, outcome, error, turns, interventions = (
            get("case_id"), get("benchmark"), get("category"), get("model"), get("variant"),
            get("outcome"), get("error"), get("turns"), get("interventions"))
        if type(case_id) is not str or type(benchmark) is not str or type(category) is not str \
                or type(model) is not str or type(variant) is not str \
                or type(outcome) is not str or outcome not in _OUTCOMES \
                or (error is not None and type(error) is not str) or type(turns) is not list \
                or interventions != []:
            return None
        termination = get("termination")
        if termination is not None and type(termination) is not str:
            return None
        built = _built(TurnTraceView.fast, turns)
        if built is None:
            return None
        return TrajectoryView(case_id, benchmark, category, model, variant, outcome, error, built,
                              [], termination)


class TurnView(View):
    """A case `Turn` without its messages and function docs."""

    __slots__ = ("index", "gold_action", "gold_calls")

    def __init__(self, index: int, gold_action: str, gold_calls: list[CallView]) -> None:
        self.index = index
        self.gold_action = gold_action
        self.gold_calls = gold_calls

    FIELDS = (("index", INT, REQUIRED), ("gold_action", one_of(GOLD_CLASSES), REQUIRED),
              ("gold_calls", CALLS, list))
    STRICT = False

    @staticmethod
    def fast(raw: Any) -> TurnView | None:
        if type(raw) is not dict:
            return None
        index, gold, calls = raw.get("index"), raw.get("gold_action"), raw.get("gold_calls")
        if type(index) is not int or type(gold) is not str or gold not in _GOLD_CLASSES \
                or type(calls) is not list:
            return None
        built = _built(CallView.fast, calls)
        if built is None:
            return None
        return TurnView(index, gold, built)


class CaseView(View):
    """A `Case` without function docs, messages and source: what classify, score and aggregate
    read."""

    __slots__ = ("id", "benchmark", "category", "turns", "environment", "gold_action", "gold_turn",
                 "multi_step", "open_turns")

    def __init__(self, id: str,
                 benchmark: str,
                 category: str,
                 turns: list[TurnView],
                 environment: dict[str, Any],
                 gold_action: str,
                 gold_turn: int,
                 multi_step: bool,
                 open_turns: bool = False) -> None:
        self.id = id
        self.benchmark = benchmark
        self.category = category
        self.turns = turns
        self.environment = environment
        self.gold_action = gold_action
        self.gold_turn = gold_turn
        self.multi_step = multi_step
        self.open_turns = open_turns

    FIELDS = (("id", STR, REQUIRED), ("benchmark", STR, REQUIRED), ("category", STR, REQUIRED),
              ("turns", list_of(view_check(TurnView)), REQUIRED), ("environment", OBJECT, dict),
              ("gold_action", one_of(GOLD_CLASSES), REQUIRED), ("gold_turn", INT, REQUIRED),
              ("multi_step", BOOL, True), ("open_turns", BOOL, False))
    STRICT = False

    @staticmethod
    def fast(raw: Any) -> CaseView | None:
        if type(raw) is not dict:
            return None
        get = raw.get
        case_id, benchmark, category, turns, environment, gold, gold_turn, multi_step = (
            get("id"), get("benchmark"), get("category"), get("turns"), get("environment"),
            get("gold_action"), get("gold_turn"), get("multi_step", True))
        open_turns = get("open_turns", False)
        if type(case_id) is not str or type(benchmark) is not str or type(category) is not str \
                or type(turns) is not list or type(environment) is not dict \
                or type(gold) is not str or gold not in _GOLD_CLASSES \
                or type(gold_turn) is not int or type(multi_step) is not bool \
                or type(open_turns) is not bool:
            return None
        built = _built(TurnView.fast, turns)
        if built is None:
            return None
        return CaseView(case_id, benchmark, category, built, environment, gold, gold_turn,
                        multi_step, open_turns)


def _built(fast: Callable[[Any], V | None], items: list[Any]) -> list[V] | None:
    """Each item built by a view's `fast`; None if one is not."""
    built = []
    for item in items:
        if (view := fast(item)) is None:
            return None
        built.append(view)
    return built


class TurnsByIndex:
    """A gold trace that holds all its turns (`turns`), as the checker reads it."""

    __slots__ = ()  # no annotations: a pydantic record (`records.GoldTrace`) keeps its fields

    def turn(self, index: int) -> Any:
        turns = self.turns  # type: ignore[attr-defined]
        if index >= len(turns):
            raise ValueError(f"{self.case_id}: gold trace has no turn {index}")  # type: ignore[attr-defined]
        return turns[index]

    def has_turns(self, count: int) -> bool:
        return len(self.turns) == count  # type: ignore[attr-defined]


def _keys(view: type) -> frozenset[str]:
    return frozenset(name for name, _, _ in view.FIELDS)  # type: ignore[attr-defined]


_CALL_KEYS, _EMISSION_KEYS = _keys(CallView), _keys(EmissionView)
_STEP_KEYS, _TRACE_KEYS = _keys(StepView), _keys(TurnTraceView)
_SCRIPTED_TRACE_KEYS = _TRACE_KEYS - {"user"}
_PARSES, _TURN_ENDS, _OUTCOMES = frozenset(PARSES), frozenset(TURN_ENDS), frozenset(OUTCOMES)
_GOLD_CLASSES = frozenset(GOLD_CLASSES)
"""What the views' `fast` builders check against."""

VIEWS = (CaseView, TrajectoryView)
_CHECKS: dict[type, Check] = {view: view_check(view) for view in VIEWS}

Cuts = tuple[tuple[tuple[str, str | None], ...], tuple[str, ...]]


def layout(keys: tuple[str, ...], skips: tuple[str, ...]) -> Cuts:
    """How `laid_out` reads a record whose fields `jsonio.dumps` writes in the order `keys`,
    cutting out `skips` undecoded: where each cut starts and ends (the skipped key and the next
    one; None: the end), and the keys that remain."""
    after = dict(zip(keys, (*keys[1:], None), strict=True))
    cuts = tuple((f',"{skip}":', after[skip] and f',"{after[skip]}":') for skip in skips)
    return cuts, tuple(key for key in keys if key not in skips)


_CUTS = {
    CaseView: layout(("id", "benchmark", "category", "turns", "tools", "environment",
                      "gold_action", "gold_turn", "multi_step", "source"), ("tools", "source")),
    TrajectoryView: layout(("case_id", "benchmark", "category", "model", "model_identity",
                            "variant", "outcome", "error", "turns", "messages",
                            "interventions"), ("messages",)),
}
"""Each view's record as `dumps` writes it (`records.Case`, `records.Trajectory`) and the fields
the view passes over unread: a case's function docs (85% of its bytes) and source, each case
turn's messages and added docs (`_TURN_CUT`), and a trajectory's conversation are never
decoded, so their syntax is not checked either (nothing a view holds depends on them)."""
_TURN_CUT = (',"messages":', ',"gold_action":', ("index", "gold_action", "gold_calls",
                                                  "gold_calls_source"))
"""Cut from every case turn (`records.Turn`: index, messages, tools_added, gold_action, ...):
its messages and added docs; and the keys that remain."""


def laid_out(text: str, view: type) -> dict[str, Any] | None:
    """The fields of a JSON object line laid out as `_CUTS[view]` says, but the skipped ones,
    cut out undecoded; None if the line is laid out otherwise. A cut runs from the first
    `,"<skip>":` (after the previous cut) to the first `,"<next key>":` after it, or from the
    last `,"<skip>":` to the closing brace for the last key; any other cut (at a key inside a
    value, say) leaves brackets unbalanced or other keys, which is checked."""
    cuts, kept = _CUTS[view]
    pieces: list[str] = []
    position = 0
    for opening, closing in cuts:
        if closing is None:
            start, end = text.rfind(opening), len(text.rstrip()) - 1
        else:
            start = text.find(opening, position)
            end = text.find(closing, start + len(opening)) if start >= 0 else -1
        if start < position or end < start:
            return None
        if not pieces and view is CaseView:
            pieces += _turn_pieces(text[:start])
        else:
            pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    try:
        values = json.loads("".join(pieces))
    except json.JSONDecodeError:
        return None
    if type(values) is not dict or tuple(values) != kept:
        return None
    if view is CaseView and (type(values["turns"]) is not list or any(
            type(turn) is not dict or tuple(turn) != _TURN_CUT[2] for turn in values["turns"])):
        return None
    return values


def _turn_pieces(head: str) -> list[str]:
    """`head` (a case line up to its function docs) without each turn's `_TURN_CUT` stretch."""
    opening, closing, _ = _TURN_CUT
    pieces, position = [], 0
    while (start := head.find(opening, position)) >= 0:
        end = head.find(closing, start + len(opening))
        if end < 0:
            break
        pieces.append(head[position:start])
        position = end
    pieces.append(head[position:])
    return pieces


def field_error(where: str, bad: BadField, view: type) -> InputError:
    """The `InputError` of a bad value: `where` is "file:line"."""
    loc = ".".join(str(part) for part in bad.loc) or "<record>"
    return InputError(f"{where}: field '{loc}': {bad.message} (in {view.__name__})")


def parse_checked(text: str, view: type[V], where: str, check: Check | None = None) -> V:
    """One JSON line as `view`, built by `check` (default: `view_check(view)` of a class of
    `VIEWS`, reading the line as `LAYOUTS` says when it is laid out so); `where` is "file:line"
    for errors."""
    if check is None:
        check = _CHECKS[view]
        raw = laid_out(text, view)
        if raw is not None:
            try:
                return check(raw)
            except BadField as bad:
                raise field_error(where, bad, view) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    try:
        return check(raw)
    except BadField as bad:
        raise field_error(where, bad, view) from None


def read_views(path: str | Path, view: type[V]) -> list[V]:
    """Every non-blank line of a JSONL file as `view`."""
    views = []
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.isspace():
                views.append(parse_checked(text, view, f"{path}:{number}"))
    return views
