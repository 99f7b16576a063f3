"""BFCL v4 raw lines -> canonical `Case` records.

Gold classes: base/long_context cases are tool_call; multi-turn turns whose ground truth is
empty take the category's abstention class (miss_param: ask; miss_func: refuse; base and
long_context: refuse, which only happens in cases 167 and 180, requests about a cancelled
booking). The decision ("gold") turn is the first turn with calls for base/long_context, the
first empty turn for miss_param, the turn just before the withheld functions arrive for
miss_func, and turn 0 for the single-turn irrelevance sets (gold: refuse, one emission, no
execution).

Tools: BFCL's function docs name Python/Java types (`dict`, `float`, `tuple`, `any`, ...); a
case carries them in the canonical JSON-schema form every benchmark's cases use, converted here
once with BFCL's own mapping (`GORILLA_TO_OPENAPI`, applied to `parameters` and `response`), so
no backend converts tools per benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from toolcalib.benchmarks.bfcl.release import API_CLASSES, MISS_FUNC_MESSAGE
from toolcalib.execute.calls import CallParseError, parse_calls
from toolcalib.jsonio import InputError, sha256_bytes
from toolcalib.records import Case, GoldClass, Message, SourceRef, ToolCall, Turn, docs_json

MULTI_TURN = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func",
              "multi_turn_miss_param")
SINGLE_TURN = ("irrelevance", "live_irrelevance")
CATEGORIES = MULTI_TURN + SINGLE_TURN
EMPTY_TURN_CLASS: dict[str, GoldClass] = {
    "multi_turn_base": "refuse",
    "multi_turn_long_context": "refuse",
    "multi_turn_miss_func": "refuse",
    "multi_turn_miss_param": "ask",
}

GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
    "object": "object", "tuple": "array", "any": "string", "byte": "integer",
    "short": "integer", "long": "integer", "double": "number", "char": "string",
    "ArrayList": "array", "Array": "array", "HashMap": "object", "Hashtable": "object",
    "Queue": "array", "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer",
}
"""BFCL's own type mapping (bfcl_eval/constants/type_mappings.py: GORILLA_TO_OPENAPI); a type
it does not name becomes "string", as BFCL's conversion does."""
SCHEMA_KEYS = ("parameters", "response")
"""The members of a function doc that are schemas (`response`: BFCL's non-standard result
schema, kept in the case; a backend shows it only where its options keep it: `DOC_EXTRAS`)."""
DOC_EXTRAS = ("response",)
"""The members of a case's function docs that are BFCL's, not the tool's: the loop marks them
on every request (`Request.extras`)."""

Lines = Iterable[tuple[int, str]]
DocsFor = Callable[[str], list[dict[str, Any]]]


def canonical_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function doc in the canonical JSON-schema form (a new dict; key order kept)."""
    return {key: _schema(value) if key in SCHEMA_KEYS else value for key, value in doc.items()}


def _schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            out[key] = GORILLA_TO_OPENAPI.get(value, "string")
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _schema(prop) for name, prop in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[key] = _schema(value)
        else:
            out[key] = value
    return out


def data_file(category: str) -> str:
    return f"BFCL_v4_{category}.json"


class _Where:
    """Builds InputErrors that name the file, the line and the field."""

    def __init__(self, file: str, line: int):
        self.file, self.line = file, line

    def error(self, field: str, problem: str) -> InputError:
        return InputError(f"{self.file}:{self.line}: field '{field}': {problem}")

    def get(self, entry: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in entry:
            raise self.error(key, "missing")
        if not isinstance(entry[key], kind):
            raise self.error(key, f"expected {_kind_name(kind)}, got {type(entry[key]).__name__}")
        return entry[key]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _load(text: str, where: _Where) -> dict[str, Any]:
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where.file}:{where.line}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from exc
    if not isinstance(entry, dict):
        raise where.error("<record>", f"expected an object, got {type(entry).__name__}")
    return entry


def _messages(turn: Any, field: str, where: _Where) -> list[Message]:
    if not isinstance(turn, list):
        raise where.error(field, f"expected a list of messages, got {type(turn).__name__}")
    messages = []
    for index, message in enumerate(turn):
        here = f"{field}[{index}]"
        if not isinstance(message, dict):
            raise where.error(here, "expected a message object")
        role, content = message.get("role"), message.get("content")
        if role not in ("system", "user", "assistant"):
            raise where.error(f"{here}.role", f"unknown role {role!r}")
        if not isinstance(content, str):
            raise where.error(f"{here}.content", "expected a string")
        messages.append(Message(role=role, content=content))
    return messages


def _source(artifact: str, artifact_sha256: str, file: str, line: int, text: str) -> SourceRef:
    return SourceRef(artifact=artifact, artifact_sha256=artifact_sha256, file=file,
                             line=line, line_sha256=sha256_bytes(text.encode("utf-8")))


def _entries(lines: Lines, file: str
             ) -> Iterator[tuple[int, str, _Where, dict[str, Any], str, list[Any]]]:
    """Each line's number, text, error locator, entry, case id and question turns."""
    for line, text in lines:
        where = _Where(file, line)
        entry = _load(text, where)
        yield line, text, where, entry, where.get(entry, "id", str), where.get(
            entry, "question", list)


def normalize_single_turn(category: str, lines: Lines, *, file: str, artifact: str,
                          artifact_sha256: str) -> list[Case]:
    """irrelevance / live_irrelevance: one turn, gold refuse, answered in one emission."""
    cases = []
    for line, text, where, entry, case_id, question in _entries(lines, file):
        tools = where.get(entry, "function", list)
        if len(question) != 1:
            raise where.error("question", f"expected exactly one turn, got {len(question)}")
        for index, doc in enumerate(tools):
            if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
                raise where.error(f"function[{index}].name", "expected a function doc with a name")
        turn = Turn(index=0, messages=_messages(question[0], "question[0]", where),
                            gold_action="refuse")
        cases.append(Case(id=case_id, benchmark="bfcl", category=category,
                                  turns=[turn],
                                  tools_json=docs_json([canonical_doc(d) for d in tools]),
                                  environment={},
                                  gold_action="refuse", gold_turn=0, multi_step=False,
                                  source=_source(artifact, artifact_sha256, file, line, text)))
    return cases


def _answers(lines: Lines, file: str) -> dict[str, tuple[int, list[list[str]]]]:
    answers = {}
    for line, text in lines:
        where = _Where(file, line)
        entry = _load(text, where)
        truth = where.get(entry, "ground_truth", list)
        for index, turn in enumerate(truth):
            if not isinstance(turn, list) or not all(isinstance(c, str) for c in turn):
                raise where.error(f"ground_truth[{index}]", "expected a list of call strings")
        answers[where.get(entry, "id", str)] = (line, truth)
    return answers


def normalize_multi_turn(category: str, lines: Lines, answer_lines: Lines, docs_for: DocsFor, *,
                         file: str, answer_file: str, artifact: str,
                         artifact_sha256: str) -> list[Case]:
    """BFCL multi-turn entries plus their possible answers -> cases."""
    answers = _answers(answer_lines, answer_file)
    cases = []
    for line, text, where, entry, case_id, question in _entries(lines, file):
        initial_config = where.get(entry, "initial_config", dict)
        involved = where.get(entry, "involved_classes", list)
        for index, name in enumerate(involved):
            if name not in API_CLASSES:
                raise where.error(f"involved_classes[{index}]", f"unknown API class {name!r}")
        if case_id not in answers:
            raise where.error("id", f"no ground truth for {case_id!r} in {answer_file}")
        answer_line, truth = answers[case_id]
        if len(truth) != len(question):
            raise InputError(f"{answer_file}:{answer_line}: field 'ground_truth': "
                             f"{len(truth)} turns, but {file}:{line} has {len(question)}")
        docs = [canonical_doc(doc) for name in involved for doc in docs_for(name)]
        withheld = _withheld(entry, where, category, len(question))
        tools = [doc for doc in docs if doc["name"] not in withheld_names(withheld)]
        by_name = {doc["name"]: doc for doc in docs}
        turns = []
        for index, turn_messages in enumerate(question):
            added = [by_name[name] for name in withheld.get(index, [])]
            messages = _messages(turn_messages, f"question[{index}]", where)
            if added:
                if messages:
                    raise where.error(f"question[{index}]",
                                      "a withheld-function turn must be empty")
                messages = [Message(role="user", content=MISS_FUNC_MESSAGE)]
            calls = _gold_calls(truth[index], by_name, answer_file, answer_line, index)
            turns.append(Turn(
                index=index, messages=messages, tools_added=added,
                gold_action="tool_call" if calls else EMPTY_TURN_CLASS[category],
                gold_calls=calls, gold_calls_source=truth[index]))
        gold_turn = _gold_turn(category, turns, withheld, where)
        case_gold = turns[gold_turn].gold_action
        environment = {
            "initial_config": initial_config,
            "involved_classes": involved,
            "long_context": category == "multi_turn_long_context",
            "excluded_function": entry.get("excluded_function", []),
            "path": entry.get("path", []),
        }
        cases.append(Case(
            id=case_id, benchmark="bfcl", category=category, turns=turns,
            tools_json=docs_json(tools),
            environment=environment, gold_action=case_gold, gold_turn=gold_turn,
            multi_step=True, source=_source(artifact, artifact_sha256, file, line, text)))
    return cases


def withheld_names(withheld: dict[int, list[str]]) -> set[str]:
    return {name for names in withheld.values() for name in names}


def _withheld(entry: dict[str, Any], where: _Where, category: str,
              n_turns: int) -> dict[int, list[str]]:
    if category != "multi_turn_miss_func":
        return {}
    raw = where.get(entry, "missed_function", dict)
    withheld = {}
    for key, names in raw.items():
        if not key.isdigit() or not 0 < int(key) < n_turns:
            raise where.error(f"missed_function.{key}", "expected a turn index of this case")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise where.error(f"missed_function.{key}", "expected a list of function names")
        withheld[int(key)] = names
    if len(withheld) != 1:
        raise where.error("missed_function", f"expected one withheld turn, got {len(withheld)}")
    return withheld


def _gold_calls(sources: list[str], by_name: dict[str, dict[str, Any]], file: str, line: int,
                turn: int) -> list[ToolCall]:
    def order(name: str) -> list[str]:
        doc = by_name.get(name, {})
        return list(doc.get("parameters", {}).get("properties", {}))

    calls = []
    for index, source in enumerate(sources):
        try:
            parsed = parse_calls(source, param_order=order)
        except CallParseError as exc:
            raise InputError(
                f"{file}:{line}: field 'ground_truth[{turn}][{index}]': {exc}") from exc
        calls.extend(parsed)
    return calls


def _gold_turn(category: str, turns: list[Turn], withheld: dict[int, list[str]],
               where: _Where) -> int:
    empty = [turn.index for turn in turns if not turn.gold_calls]
    if category == "multi_turn_miss_func":
        arrival = next(iter(withheld))
        if arrival - 1 not in empty:
            raise where.error("missed_function",
                              f"turn {arrival - 1} before the withheld functions has ground truth")
        return arrival - 1
    if category == "multi_turn_miss_param":
        if not empty:
            raise where.error("question", "miss_param case without an empty ground-truth turn")
        return empty[0]
    with_calls = [turn.index for turn in turns if turn.gold_calls]
    if not with_calls:
        raise where.error("question", "no turn has ground-truth calls")
    return with_calls[0]
