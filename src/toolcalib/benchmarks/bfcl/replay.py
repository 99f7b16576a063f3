"""BFCL's published runs (`replay` models): the recorded outputs answer the scripted loop's
requests (`RecordedRun`), so an existing run goes through our classify/score/aggregate stages
unchanged (`Bfcl.import_run`, variant `baseline`: what the recorded model actually saw).

Layout, as BFCL writes it (`BaseHandler.write`: `<result_dir>/<registry_dir_name>/<group>/
{VERSION_PREFIX}_{category}_result.json`, group from `get_directory_structure_by_id`) and reads
it (`eval_runner.runner`: `subdir.rglob(RESULT_FILE_PATTERN)`, category from the file name):
`<path>/<model>/multi_turn/BFCL_v4_multi_turn_base_result.json`,
`.../non_live/BFCL_v4_irrelevance_result.json`, `.../live/BFCL_v4_live_irrelevance_result.json`.
As BFCL's evaluator does, result files are found at any depth under `<path>/<model>`, so
the flat layout of older releases (`<model>/BFCL_v4_<category>_result.json`) works too; two
files for one category are an error. Files of categories we do not run are ignored.

Each line is `{"id", "result", ...}`: multi-turn `result` is a list of turns, each a list of
step outputs; single-turn (irrelevance) `result` is one output. `format` says what an output is:
`prompt`: the model's text (`[f(a=1)]`), returned as `Emission(text=...)` for the harness's
decoder; `fc`: a BFCL FC handler's decoded structure, `[{"f": {"a": 1}}]` or
`[{"f": "{\\"a\\": 1}"}]` (a dict for one call, a string for a text reply), returned as
structured calls. An FC output BFCL's `convert_to_function_call` could not decode (arguments not
a JSON object, an item that is not a dict) becomes JSON text that our decoder reads as
`malformed`: no call, so the turn ends, as it did in BFCL's loop.

Divergence policy. The loop asks for (case, turn, step); our decoder may end a turn elsewhere
than BFCL's did. A step the record does not have is answered `Emission(text="")`: an empty
reply ends the turn, as BFCL's own empty output would (it is model behaviour, never an
InfrastructureError). Every such answer, every recorded step never asked for, and every FC text
reply that our decoder reads as calls (BFCL's FC decoder would not) is a `Divergence` in
`divergences` (read it after the run; a case's entries restart when the case is replayed from
turn 0, step 0). They never change `identity()`. A case id missing from its file, or a line
holding BFCL's `"Error during inference: ..."` instead of outputs, is an InfrastructureError
naming the file and id (outcome `error`, never scored), listed in `errors`. Malformed files and
missing options fail at construction with an InputError naming the file, line and field, or the
model and option.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.execute.textcalls import parse_text_calls
from toolcalib.jsonio import InputError, sha256_file
from toolcalib.records import Emission, ToolCall

if TYPE_CHECKING:
    from toolcalib.backends.replay import ReplayOptions

VERSION_PREFIX = "BFCL_v4"
"""bfcl_eval/constants/category_mapping.py: VERSION_PREFIX."""
RESULT_FILE_PATTERN = f"{VERSION_PREFIX}_*_result.json"
"""bfcl_eval/constants/eval_config.py: RESULT_FILE_PATTERN."""
RESULT_NAME = re.compile(rf"{VERSION_PREFIX}_(\w+?)_result\.json")
"""bfcl_eval/utils.py: extract_test_category, for result files."""
GROUPS = {"multi_turn_base": "multi_turn", "multi_turn_long_context": "multi_turn",
          "multi_turn_miss_func": "multi_turn", "multi_turn_miss_param": "multi_turn",
          "irrelevance": "non_live", "live_irrelevance": "live"}
"""bfcl_eval/utils.py: get_directory_structure_by_category, for the categories we run (the
BFCL plugin's categories: a test checks they agree)."""
INFERENCE_ERROR = "Error during inference: "
"""bfcl_eval/_llm_response_generation.py: the `result` BFCL records when inference raised."""

Format = Literal["prompt", "fc"]
T = TypeVar("T")


def _multi_turn(category: str) -> bool:
    """Whether BFCL records the category's outputs per turn and step (its `multi_turn` group)."""
    return GROUPS[category] == "multi_turn"


DivergenceKind = Literal["missing_step", "unconsumed_steps", "text_calls"]
REQUIRED = {"model": "the model's folder under 'path'", "format": "'prompt' or 'fc'"}
"""The `replay` options BFCL needs beyond `path` (optional for other benchmarks)."""


def _required(name: str, option: str, value: T | None) -> T:
    """A `replay` option BFCL needs (`REQUIRED`), set."""
    if value is None:
        raise InputError(f"model '{name}': option '{option}' ({REQUIRED[option]}) is required "
                         "to replay a BFCL run")
    return value


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


@dataclass(frozen=True)
class _Entry:
    file: Path
    line: int
    turns: list[list[Any]] | None
    """Step outputs per turn (one turn of one step for single-turn cases); None when BFCL
    recorded an inference error instead."""
    error: str | None
    input_tokens: Any
    output_tokens: Any


@dataclass
class _CaseReplay:
    entry: _Entry
    asked: dict[int, int] = field(default_factory=dict)
    """Turn -> steps asked for."""
    events: list[Divergence] = field(default_factory=list)


def result_path(path: str | Path, model: str, category: str) -> Path:
    """Where BFCL writes a model's results for one category (`path`: its results folder)."""
    name = f"{VERSION_PREFIX}_{category}_result.json"
    return Path(path) / model.replace("/", "_") / GROUPS[category] / name


def find_result_files(model_dir: Path) -> dict[str, Path]:
    """Category -> result file, for the categories we run, at any depth under `model_dir`."""
    found: dict[str, Path] = {}
    for path in sorted(model_dir.rglob(RESULT_FILE_PATTERN)):
        match = RESULT_NAME.fullmatch(path.name)
        if not match or match.group(1) not in GROUPS or not path.is_file():
            continue
        category = match.group(1)
        if category in found:
            raise InputError(f"two result files for category '{category}': {found[category]}"
                             f" and {path}")
        found[category] = path
    return found


def load_result_file(path: Path, category: str, fmt: Format) -> dict[str, _Entry]:
    """Case id -> entry; any malformed line raises an InputError naming file, line and field."""
    entries: dict[str, _Entry] = {}
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            where = f"{path}:{number}"
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
                                 ) from exc
            if not isinstance(line, dict):
                raise InputError(f"{where}: field '<record>': expected an object, got "
                                 f"{type(line).__name__}")
            case_id = line.get("id")
            if not isinstance(case_id, str):
                raise InputError(f"{where}: field 'id': expected a string, got "
                                 f"{type(case_id).__name__}")
            if case_id.rsplit("_", 1)[0] != category:
                raise InputError(f"{where}: field 'id': '{case_id}' is not a {category} case")
            if case_id in entries:
                raise InputError(f"{where}: field 'id': '{case_id}' already on line "
                                 f"{entries[case_id].line}")
            if "result" not in line:
                raise InputError(f"{where}: field 'result': missing")
            turns, error = _turns(line["result"], _multi_turn(category), fmt, where)
            entries[case_id] = _Entry(path, number, turns, error, line.get("input_token_count"),
                                      line.get("output_token_count"))
    return entries


def _turns(result: Any, multi_turn: bool, fmt: Format,
           where: str) -> tuple[list[list[Any]] | None, str | None]:
    """A line's outputs as turns of steps, or its inference error; shape errors raise."""
    if isinstance(result, str) and (multi_turn or result.startswith(INFERENCE_ERROR)):
        return None, result
    if not multi_turn:
        _check_output(result, fmt, where, "result")
        return [[result]], None
    if not isinstance(result, list):
        raise InputError(f"{where}: field 'result': expected a list of turns, got "
                         f"{type(result).__name__}")
    for t, steps in enumerate(result):
        if not isinstance(steps, list):
            raise InputError(f"{where}: field 'result[{t}]': expected a list of step outputs,"
                             f" got {type(steps).__name__}")
        for s, output in enumerate(steps):
            _check_output(output, fmt, where, f"result[{t}][{s}]")
    return result, None


def _check_output(output: Any, fmt: Format, where: str, name: str) -> None:
    if fmt == "prompt" and not isinstance(output, str):
        raise InputError(f"{where}: field '{name}': expected a string (format 'prompt'), got "
                         f"{type(output).__name__}")


def fc_emission(output: Any) -> Emission:
    """A BFCL FC output as an Emission: structured calls, text, or (when BFCL's
    `convert_to_function_call` would fail on it) JSON text our decoder reads as malformed."""
    if output is None or isinstance(output, str):
        return Emission(text=output or "")
    items = [output] if isinstance(output, dict) else output if isinstance(output, list) else None
    calls: list[ToolCall] = []
    for item in items if items is not None else [output]:
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
    if not calls:
        return Emission(text="")
    return Emission(tool_calls=calls, structured=True, parse="ok", finish_reason="tool_calls")


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


def _token(value: Any, turn: int, step: int, multi_turn: bool) -> int | None:
    """A recorded token count (per step for multi-turn, one number otherwise), if well formed."""
    try:
        if multi_turn:
            value = value[turn][step]
    except (TypeError, IndexError, KeyError):
        return None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return int(value) if is_number and value >= 0 else None


class RecordedRun:
    """A backend answering each request from a recorded BFCL run (see the module docstring):
    model `name`'s result files, as its `replay` options name them."""

    cacheable = False

    def __init__(self, name: str, options: ReplayOptions):
        self.name = name
        self.model: str = _required(name, "model", options.model)
        self.format: Format = _required(name, "format", options.format)
        self.model_dir = Path(options.path) / self.model
        if not self.model_dir.is_dir():
            raise InputError(f"model '{name}': no folder {self.model_dir}")
        paths = find_result_files(self.model_dir)
        if not paths:
            raise InputError(f"model '{name}': no {RESULT_FILE_PATTERN} file of "
                             f"{', '.join(GROUPS)} under {self.model_dir}")
        self._paths = paths
        self._files = {category: load_result_file(path, category, self.format)
                       for category, path in paths.items()}
        self._identity = {
            "backend": "replay", "model": self.model, "format": self.format,
            "files": {path.relative_to(self.model_dir).as_posix(): sha256_file(path)
                      for path in paths.values()},
        }
        self._replays: dict[str, _CaseReplay] = {}
        self.errors: list[str] = []
        """The InfrastructureErrors answered (missing ids, recorded inference errors)."""

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
                        f"({replay.entry.file}:{replay.entry.line})"))
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
        if case.category not in self._files:
            return self._error(f"no result file for category '{case.category}' under "
                               f"{self.model_dir}")
        entry = self._files[case.category].get(case.id)
        if entry is None:
            return self._error(f"{self._paths[case.category]}: no result for case '{case.id}'")
        if entry.turns is None:
            return self._error(f"{entry.file}:{entry.line}: BFCL recorded no outputs for "
                               f"'{case.id}': {entry.error}")
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
                f"not recorded ({held}; {entry.file}:{entry.line}): answered with empty text"))
            return Emission(text="")
        output = entry.turns[turn][step]
        if self.format == "prompt":
            emission = Emission(text=output)
        else:
            emission = fc_emission(output)
            if isinstance(output, str) and parse_text_calls(output).calls:
                replay.events.append(Divergence(
                    case.id, turn, step, "text_calls",
                    "an FC text reply that our decoder reads as calls (BFCL's FC decoder "
                    "does not)"))
        multi = _multi_turn(case.category)
        return emission.replace(
            input_tokens=_token(entry.input_tokens, turn, step, multi),
            output_tokens=_token(entry.output_tokens, turn, step, multi),
        )

    def _error(self, message: str) -> InfrastructureError:
        error = InfrastructureError(f"replay '{self.model}': {message}")
        self.errors.append(str(error))
        return error
