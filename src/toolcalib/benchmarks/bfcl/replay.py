"""BFCL's published runs (`replay` models): the recorded outputs answer the scripted loop's
requests (`RecordedRun`), so an existing run goes through our classify/score/aggregate stages
unchanged (`Bfcl.import_run`, variant `baseline`: what the recorded model actually saw). The
files are found and read by `runfiles`, checked against the release by `published`.

What an output is: a string is the model's text (prompt mode, and the FC handlers that keep a
reply's raw text), returned as `Emission(text=...)` for the harness's decoder; a list or dict
is a BFCL FC handler's decoded structure, `[{"f": {"a": 1}}]` or `[{"f": "{\\"a\\": 1}"}]`
(a dict for one call, a string item for a text reply), returned as structured calls and text.
Option `format: prompt` requires strings. An FC output BFCL's `convert_to_function_call` could
not decode (arguments not a JSON object, an item neither a dict nor a string) becomes JSON
text that our decoder reads as `malformed`: no call, so the turn ends, as it did in BFCL's loop.

Text not recorded. BFCL's FC handler keeps only the calls of a reply: a reply without a call
is recorded as `[]`, its text dropped. Such a structure with no call and no text is
`Emission(text_recorded=False)` (classified `unknown`) unless the record shows the model wrote
nothing (0 output tokens: an empty reply); with the token count missing nothing tells, so it
is unknown too. A recorded string, `"[]"` included (prompt-mode models writing an empty call
list), is text.

Divergence policy. The loop asks for (case, turn, step); our decoder may end a turn elsewhere
than BFCL's did. A step the record does not have is answered `Emission(text="")`: an empty
reply ends the turn, as BFCL's own empty output would (it is model behaviour, never an
InfrastructureError). Every such answer, every recorded step never asked for, and every FC text
reply that our decoder reads as calls (BFCL's FC decoder would not) is a `Divergence` in
`divergences` (read it after the run; a case's entries restart when the case is replayed from
turn 0, step 0). A case the import excludes (`excluded`: a release check failed), or a line
holding BFCL's `"Error during inference: ..."` instead of outputs, is an InfrastructureError
naming the file and id (outcome `error`, never scored), listed in `errors`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.benchmarks.bfcl.runfiles import ResultLine, multi_turn
from toolcalib.execute.textcalls import parse_text_calls
from toolcalib.records import Emission, ToolCall

if TYPE_CHECKING:
    from collections.abc import Mapping

DivergenceKind = Literal["missing_step", "unconsumed_steps", "text_calls"]


@dataclass(frozen=True)
class Divergence:
    """Where replaying a record departed from it: `missing_step` (asked, not recorded: answered
    with empty text), `unconsumed_steps` (recorded from `step` on, never asked for) or
    `text_calls` (an FC text reply that our decoder reads as calls)."""

    case_id: str
    turn: int
    step: int
    kind: DivergenceKind
    detail: str

    def __str__(self) -> str:
        return f"{self.case_id} turn {self.turn} step {self.step}: {self.kind}: {self.detail}"


@dataclass
class _CaseReplay:
    entry: ResultLine
    asked: dict[int, int] = field(default_factory=dict)
    """Turn -> steps asked for."""
    events: list[Divergence] = field(default_factory=list)


def fc_emission(output: Any, output_tokens: int | None = 1) -> Emission:
    """A BFCL FC output as an Emission: structured calls and text, or (when BFCL's
    `convert_to_function_call` would fail on it) JSON text our decoder reads as malformed. A
    structure holding neither a call nor text is a reply whose text was not recorded unless
    `output_tokens` is 0 (see the module docstring)."""
    if output is None or isinstance(output, str):
        return Emission(text=output or "")
    items = [output] if isinstance(output, dict) else output if isinstance(output, list) else None
    calls: list[ToolCall] = []
    texts: list[str] = []
    for item in items if items is not None else [output]:
        if isinstance(item, str):
            texts.append(item)
            continue
        if not isinstance(item, dict):
            return _malformed(output)
        for name, arguments in item.items():
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments, parse_constant=_reject_constant)
                except (ValueError, RecursionError):
                    return _malformed(output)
            if not isinstance(arguments, dict) or not name.strip():
                return _malformed(output)
            calls.append(ToolCall(name=name, arguments=arguments))
    text = "\n".join(texts)
    if calls:
        return Emission(text=text, tool_calls=calls, structured=True, parse="ok",
                        finish_reason="tool_calls")
    return Emission(text=text, text_recorded=bool(text.strip()) or output_tokens == 0)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _malformed(output: Any) -> Emission:
    """`[{"name", "arguments"}]` text that keeps the recorded values and fails our decoding:
    non-object arguments, an empty name, or (for an item that is not a dict) a null name."""
    items = output if isinstance(output, list) else [output]
    objects = [{"name": name, "arguments": arguments}
               for item in items
               for name, arguments in (item.items() if isinstance(item, dict) else [(None, item)])]
    return Emission(text=json.dumps(objects, ensure_ascii=False))


def token(value: Any, turn: int, step: int, is_multi: bool) -> int | None:
    """A recorded token count (per step for multi-turn, one number otherwise), if well formed."""
    try:
        if is_multi:
            value = value[turn][step]
    except (TypeError, IndexError, KeyError):
        return None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return int(value) if is_number and value >= 0 else None


class RecordedRun:
    """A backend answering each request from a recorded BFCL run's result lines (see the module
    docstring); `excluded` maps the case ids the import will not score to the reason; `fc`: the
    run declared FC mode (option `format: fc`), so a bare string output is an FC text reply."""

    cacheable = False

    def __init__(self, name: str, model: str, entries: Mapping[str, ResultLine],
                 identity: dict[str, Any], excluded: Mapping[str, str], *, fc: bool = False):
        self.name = name
        self.model = model
        self.fc = fc
        self._entries = entries
        self._identity = identity
        self._excluded = excluded
        self._replays: dict[str, _CaseReplay] = {}
        self.errors: list[str] = []
        """The InfrastructureErrors answered (excluded cases, recorded inference errors)."""

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = json.loads(json.dumps(self._identity))
        return identity

    @property
    def divergences(self) -> list[Divergence]:
        """Every divergence of the cases replayed so far, by case (first replayed first), turn
        and step; recorded steps count as unconsumed until they are asked for."""
        found: list[Divergence] = []
        for case_id, replay in self._replays.items():
            events = list(replay.events)
            for turn, steps in enumerate(replay.entry.turns or []):
                asked = replay.asked.get(turn, 0)
                if len(steps) > asked:
                    events.append(Divergence(
                        case_id, turn, asked, "unconsumed_steps",
                        f"{len(steps) - asked} recorded step(s) never asked for "
                        f"({replay.entry.file.name}:{replay.entry.line})"))
            found.extend(sorted(events, key=lambda d: (d.turn, d.step)))
        return found

    def notes(self) -> list[str]:
        """One line per divergence and per error answered (`ImportedRun.notes`)."""
        return [str(d) for d in self.divergences] + self.errors

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: Request) -> Answer:
        case = request.case
        if case is None:
            raise ValueError("a replayed request is a step of a case")
        if case.id in self._excluded:
            return self._error(f"'{case.id}' excluded: {self._excluded[case.id]}")
        entry = self._entries.get(case.id)
        if entry is None:
            return self._error(f"no record of case '{case.id}'")
        if entry.turns is None:
            return self._error(f"{entry.file.name}:{entry.line}: BFCL recorded no outputs "
                               f"for '{case.id}': {entry.error}")
        turn, step = request.turn, request.step
        if (turn, step) == (0, 0) or case.id not in self._replays:
            self._replays.pop(case.id, None)
            self._replays[case.id] = _CaseReplay(entry)
        replay = self._replays[case.id]
        replay.asked[turn] = max(replay.asked.get(turn, 0), step + 1)
        if turn >= len(entry.turns) or step >= len(entry.turns[turn]):
            recorded = len(entry.turns[turn]) if turn < len(entry.turns) else None
            held = f"{recorded} step(s)" if recorded is not None else "no such turn"
            replay.events.append(Divergence(
                case.id, turn, step, "missing_step",
                f"not recorded ({held}; {entry.file.name}:{entry.line}): answered with "
                "empty text"))
            return Emission(text="")
        output = entry.turns[turn][step]
        is_multi = multi_turn(case.category)
        tokens = token(entry.output_tokens, turn, step, is_multi)
        emission = fc_emission(output, tokens)
        structure = self.fc or isinstance(output, list | dict)
        if structure and emission.text and not emission.tool_calls and \
                parse_text_calls(emission.text).calls:
            replay.events.append(Divergence(
                case.id, turn, step, "text_calls",
                "an FC text reply that our decoder reads as calls (BFCL's FC decoder "
                "does not)"))
        return emission.replace(
            input_tokens=token(entry.input_tokens, turn, step, is_multi),
            output_tokens=tokens)

    def _error(self, message: str) -> InfrastructureError:
        error = InfrastructureError(f"replay '{self.model}': {message}")
        self.errors.append(str(error))
        return error
