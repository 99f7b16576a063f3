"""Turn a backend's raw emission into the calls the harness will execute.

Structured API calls are taken as they are. Otherwise the text is read, never evaluated, as the
first of these formats that applies:

1. `tag`: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one or more, anywhere in
   the text; a missing closing tag is accepted. A tag holding an empty list (`<tool_call>[]`)
   is an empty call list: it calls nothing and attempts nothing.
2. `json`: the whole text is JSON calls: `{"name", "arguments" | "parameters"}`, a list of them,
   several of them one after another, `{"function": {...}}` or `{"tool_calls": [...]}`.
3. `python`: the whole text (optionally fenced) is `f(a=1)`, `[f(a=1), g(b='x')]` or the same
   list without its brackets (as BFCL's prompt decoder reads it), read by
   `parse_calls`: literal arguments only, positional ones need `param_order`, and a dotted
   function name must be one of `tool_names` (the visible tools: BFCL has `math.sum`).
4. `fenced_json`: fenced code blocks (```json ... ```) holding form 2, prose around them allowed.

JSON is read by `json`, falling back to `ast.literal_eval` (literals only) for Python-style
dicts; arguments may also be a JSON string holding an object, as OpenAI sends them.

`malformed` is an attempted call that does not parse: a `<tool_call>` tag whose content is not
a valid call; a whole text or fenced block starting with `{`/`[` and holding a "name",
"function" or "tool_calls" key that does not decode (truncated, trailing text); a decoded call
whose name is not a non-empty string or whose arguments are not an object; a whole text
(optionally fenced) that is Python call-shaped (`call_shaped`) and that the literal parser
rejects. Call-shaped: it starts `[name(` (or `name(` and ends `)`), or it is one expression
(read by `ast.parse`, never run) that is a call whose callee is rooted in a name, its `(` and
`[` written right after what they apply to, or a bracketed list or tuple holding such a call.
So every call of something that is not a plain tool name is malformed and runs nothing: an
attribute chain that is no visible tool's name (`os.system("ls")`, `api.cd(folder="x")`), a
subscript (`tools["cd"](folder="x")`), a call on a call's result (`f(x)(y)`), a list of such
(`[a.b(c=1), d()]`), as are positional arguments without `param_order`. Everything else is
`none`: plain prose, prose that mentions a function ("use `os.path.join`"), a parenthetical
("Paris (France)"), JSON that is not a call (`{"answer": 3}`), and calls written mid-prose
without tags or fences, which are not searched for (as the paper classifier's anchored
patterns do not).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from toolcalib.execute.calls import (
    MAX_DEPTH,
    CallParseError,
    ParamOrder,
    json_scalar,
    parse_calls,
)
from toolcalib.records import Emission, ToolCall

Status = Literal["none", "ok", "malformed"]

TAG = re.compile(r"<tool_call\b[^<>\n]*>?", re.IGNORECASE)
TAG_CLOSE = re.compile(r"</tool_call\s*>", re.IGNORECASE)
EMPTY_LIST = re.compile(r"\[\s*\]")
FENCE = re.compile(r"```[^`\n]{0,40}\n((?:(?!```).)*)(?:```|\Z)", re.DOTALL)
"""A fenced block (the closing fence may be cut off); the short info string keeps it linear."""
WHOLE_FENCE = re.compile(r"```[^`\n]{0,40}\n((?:(?!```).)*?)(?:```)?", re.DOTALL)
CALL_KEY = re.compile(r"""["'](?:name|function|tool_calls)["']\s*:""")
PYTHON_LIST = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
PYTHON_CALL = re.compile(r"[A-Za-z_][\w.]*\(")
CALL_START = re.compile(r"[\[(A-Za-z_]")
"""How a call-shaped expression starts: a name or a bracket."""
WHITESPACE = re.compile(r"\s*")
CALL_EXTRA_KEYS = {"id", "type"}


@dataclass(frozen=True)
class TextParse:
    """What a text held: its calls, `none`/`ok`/`malformed`, why it was malformed, and the
    format that matched (`tag`, `json`, `fenced_json`, `python`; empty when none did)."""

    calls: list[ToolCall] = field(default_factory=list)
    status: Status = "none"
    error: str | None = None
    format: str = ""


NONE = TextParse()


def decode_emission(raw: Emission, param_order: ParamOrder | None = None,
                    tool_names: Collection[str] = ()) -> Emission:
    """A copy with `tool_calls`, `parse` and `parse_error` set. Structured calls pass through
    (`ok`); calls read from the text clear `structured`. `param_order` names positional
    arguments of Python-style calls and `tool_names` lists the visible tools (both from the
    visible tools' docs). Idempotent; never raises."""
    if raw.tool_calls:
        return raw.replace(parse="ok", parse_error=None)
    result = parse_text_calls(raw.text, param_order, tool_names)
    update: dict[str, Any] = {
        "tool_calls": result.calls, "parse": result.status, "parse_error": result.error
    }
    if result.calls:
        update["structured"] = False
    return raw.replace(**update)


def parse_text_calls(text: str, param_order: ParamOrder | None = None,
                     tool_names: Collection[str] = ()) -> TextParse:
    """The calls written in `text` (see the module docstring for formats and statuses);
    `tool_names`: the visible tools, the only dotted function names that are tool names."""
    if TAG.search(text):
        return _tags(text)
    body = text.strip()
    whole = fenced.group(1).strip() if (fenced := WHOLE_FENCE.fullmatch(body)) else body
    if whole.startswith(("{", "[")) and not PYTHON_LIST.match(whole):
        result = _json(whole, "fenced_json" if fenced else "json")
        if result.status != "none":
            return result
    if call_shaped(whole):
        try:
            calls = parse_calls(whole, param_order, frozenset(tool_names))
            return TextParse(calls, "ok", format="python")
        except CallParseError as exc:
            return _malformed("python", str(exc))
    results = [_json(block.strip(), "fenced_json") for block in FENCE.findall(body)]
    if bad := next((r for r in results if r.status == "malformed"), None):
        return bad
    calls = [call for result in results for call in result.calls]
    return TextParse(calls, "ok", format="fenced_json") if calls else NONE


def call_shaped(source: str) -> bool:
    """`source` is presented as a Python call (module docstring): `[name(`..., `name(`...`)`,
    or one expression that is a call rooted in a name, or a list or tuple holding one. The
    expression is parsed, never evaluated."""
    if PYTHON_LIST.match(source) or (PYTHON_CALL.match(source) and source.endswith(")")):
        return True
    if not source.endswith((")", "]")) or not CALL_START.match(source):
        return False
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    items = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    return any(_rooted_call(source, item) for item in items)


def _rooted_call(source: str, node: ast.expr) -> bool:
    """A call whose callee is a name followed by attributes, subscripts and calls, each `(` or
    `[` right after what it applies to (`Paris (France)` is prose, not a call)."""
    if not isinstance(node, ast.Call):
        return False
    while isinstance(node, ast.Call | ast.Subscript | ast.Attribute):
        inner = node.func if isinstance(node, ast.Call) else node.value
        if not isinstance(node, ast.Attribute):
            opener = "(" if isinstance(node, ast.Call) else "["
            written = ast.get_source_segment(source, node) or ""
            head = ast.get_source_segment(source, inner) or ""
            if not head or not written.startswith(head + opener):
                return False
        node = inner
    return isinstance(node, ast.Name)


def _tags(text: str) -> TextParse:
    """Every `<tool_call>` tag must hold JSON calls; its body ends at `</tool_call>`, the next
    tag or the end of the text."""
    opens = list(TAG.finditer(text))
    calls: list[ToolCall] = []
    for index, tag in enumerate(opens):
        end = opens[index + 1].start() if index + 1 < len(opens) else len(text)
        body = TAG_CLOSE.split(text[tag.end() : end], maxsplit=1)[0].strip()
        if fenced := WHOLE_FENCE.fullmatch(body):
            body = fenced.group(1).strip()
        where = f"<tool_call> {index + 1}"
        if not tag.group(0).endswith(">"):
            return _malformed("tag", f"{where}: unterminated opening tag")
        if not body:
            return _malformed("tag", f"{where}: empty")
        if EMPTY_LIST.fullmatch(body):
            continue
        result = _json(body, "tag", attempted=True)
        if result.status == "malformed":
            return _malformed("tag", f"{where}: {result.error}")
        if result.status == "none":
            return _malformed("tag", f"{where}: not a call object")
        calls.extend(result.calls)
    return TextParse(calls, "ok", format="tag") if calls else NONE


def _json(source: str, fmt: str, attempted: bool = False) -> TextParse:
    """JSON calls making up all of `source`; a failure is malformed only when the source was an
    attempted call (`attempted`, or it starts with `{`/`[` and holds a call key)."""
    attempted = attempted or (source.startswith(("{", "[")) and bool(CALL_KEY.search(source)))
    try:
        values = _decode(source)
    except ValueError as exc:
        return _malformed(fmt, f"invalid JSON: {exc}") if attempted else NONE
    shaped = [_call_objects(value) for value in values]
    if all(objects is None for objects in shaped):
        return NONE
    calls: list[ToolCall] = []
    for number, objects in enumerate(shaped, 1):
        if objects is None:
            return _malformed(fmt, f"JSON value {number} is not a call")
        for obj in objects:
            try:
                calls.append(_tool_call(obj))
            except ValueError as exc:
                return _malformed(fmt, str(exc))
    return TextParse(calls, "ok", format=fmt) if calls else NONE


def _decode(source: str) -> list[Any]:
    """The JSON values making up `source` (whitespace between them), else one Python literal;
    values come out JSON-native. Raises ValueError."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    try:
        while position < len(source):
            value, end = decoder.raw_decode(source, position)
            values.append(_native(value))
            gap = WHITESPACE.match(source, end)
            assert gap is not None  # `\s*` matches at every position
            position = gap.end()
        return values
    except (ValueError, RecursionError) as exc:
        json_error = f"after {len(values)} JSON value(s): {exc}" if values else str(exc)
    try:
        value = ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(json_error) from None
    return [_native(value)]


def _native(value: Any, depth: int = 0) -> Any:
    """`value` as JSON-native data (tuples become lists); anything else raises ValueError."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    if json_scalar(value):
        return value
    if isinstance(value, list | tuple):
        return [_native(item, depth + 1) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("object keys must be strings")
        return {key: _native(item, depth + 1) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} values are not JSON")


def _call_objects(value: Any) -> list[Any] | None:
    """The call objects a decoded value holds, or None when it is not call-shaped. Once a list
    holds one call, every item counts as one (and fails later if it is not)."""
    if isinstance(value, list):
        objects = [_call_objects(item) for item in value]
        if all(found is None for found in objects):
            return None
        return [obj for item, found in zip(value, objects, strict=True) for obj in found or [item]]
    if not isinstance(value, dict):
        return None
    if "tool_calls" in value:
        calls = value["tool_calls"]
        items = calls if isinstance(calls, list) else [] if calls is None else [calls]
        return [obj for item in items for obj in _call_objects(item) or [item]] or None
    if isinstance(value.get("function"), dict) and set(value) <= {"function"} | CALL_EXTRA_KEYS:
        return [value["function"]]
    if "name" in value and (
        "arguments" in value or "parameters" in value or set(value) <= {"name"} | CALL_EXTRA_KEYS
    ):
        return [value]
    return None


def _tool_call(obj: Any) -> ToolCall:
    """A call object as a ToolCall; a missing/non-string name or non-object arguments raise."""
    if not isinstance(obj, dict):
        raise ValueError(f"call {json.dumps(obj)[:80]} is not an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"call name must be a non-empty string, got {json.dumps(name)[:80]}")
    key = "arguments" if "arguments" in obj else "parameters"
    arguments = obj.get(key, {})
    if isinstance(arguments, str):
        try:
            arguments = _native(json.loads(arguments))
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{name}: {key} string is not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"{name}: {key} must be an object, got {json.dumps(arguments)[:80]}")
    return ToolCall(name=name, arguments=arguments)


def _malformed(fmt: str, error: str) -> TextParse:
    return TextParse([], "malformed", error, fmt)
