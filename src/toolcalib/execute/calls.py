"""Parse call source text into `ToolCall`s by reading literals only: nothing is ever evaluated.

Accepted: one call `f(a=1)` or a list of calls `[f(a=1), g(b='x')]`, whose function is a plain
name and whose arguments are literals (strings, numbers, booleans, None, and lists, tuples,
sets and dicts of literals). A dotted name (`math.sum`) is a tool's name only when the caller
names the tools (`tool_names`) and it is one of them: otherwise, e.g. `os.system(...)` or
`api.cd(...)`, it is an attribute chain, rejected like a subscript (`tools["cd"](...)`) or a call
on a call's result (`f(x)(y)`); without `tool_names` every dotted name is read as one (a
benchmark's own gold answers). Values come out JSON-native, so a call survives a JSON round trip
unchanged: tuples and sets become lists (a set keeps its first occurrence of each element), and
dict keys must be strings. Positional arguments are named through `param_order`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

from toolcalib.records import ToolCall

ParamOrder = Callable[[str], list[str]]
"""Function name -> its parameter names in positional order."""

MAX_DEPTH = 64
"""Deepest literal nesting accepted in one argument."""


class CallParseError(ValueError):
    """The text is not a call (or list of calls) with literal arguments."""


def parse_calls(source: str, param_order: ParamOrder | None = None,
                tool_names: Collection[str] | None = None) -> list[ToolCall]:
    """Parse `f(a=1)`, `[f(a=1), g(b='x')]` or the bare `f(a=1), g(b='x')` (BFCL's prompt
    decoder puts brackets around a text that lacks them) into calls; anything else raises
    CallParseError. `tool_names`: the visible tools, the only dotted names accepted (None: any
    dotted name)."""
    source = source.strip()
    if not source.startswith(("[", "(")) and "," in source:
        source = f"[{source}]"
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CallParseError(f"not a Python expression: {exc}") from exc
    body = tree.body
    if isinstance(body, ast.Call):
        return [_call(body, param_order, tool_names)]
    if isinstance(body, ast.List):
        calls = []
        for index, node in enumerate(body.elts):
            if not isinstance(node, ast.Call):
                raise CallParseError(f"list item {index} is {_describe(node)}, not a call")
            calls.append(_call(node, param_order, tool_names))
        return calls
    raise CallParseError(f"expected a call or a list of calls, got {_describe(body)}")


def render_call(call: ToolCall) -> str:
    """Python source for a call, keyword arguments as reprs: `f(a=1, b='x')`."""
    arguments = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    return f"{call.name}({arguments})"


def param_order_from_docs(docs: Iterable[dict[str, Any]]) -> ParamOrder:
    """A `ParamOrder` reading each function doc's `parameters.properties` key order."""
    orders = {doc["name"]: list(doc.get("parameters", {}).get("properties", {})) for doc in docs}

    def order(name: str) -> list[str]:
        if name not in orders:
            raise CallParseError(f"no parameter order known for function '{name}'")
        return orders[name]

    return order


def _dotted_name(node: ast.expr) -> str | None:
    """`f` or `math.sum`: names only (tool names may contain dots); nothing is looked up."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _call(node: ast.Call, param_order: ParamOrder | None,
          tool_names: Collection[str] | None) -> ToolCall:
    name = _dotted_name(node.func)
    if name is None:
        raise CallParseError(
            f"the called function must be a (dotted) name, got {_describe(node.func)}"
            f" in '{ast.unparse(node)[:80]}'"
        )
    if tool_names is not None and "." in name and name not in tool_names:
        raise CallParseError(
            f"the called function must be a tool name, got an attribute chain '{name}' (no "
            f"visible tool has that name) in '{ast.unparse(node)[:80]}'"
        )
    arguments: dict[str, Any] = {}
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise CallParseError(f"{name}: *-unpacking is not allowed")
    if node.args:
        if param_order is None:
            raise CallParseError(f"{name}: positional arguments need a known parameter order")
        names = param_order(name)
        if len(node.args) > len(names):
            raise CallParseError(
                f"{name}: {len(node.args)} positional arguments, but it takes {len(names)}"
            )
        for key, arg in zip(names, node.args, strict=False):
            arguments[key] = _literal(arg, f"{name}: argument '{key}'", 0)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise CallParseError(f"{name}: **-unpacking is not allowed")
        if keyword.arg in arguments:
            raise CallParseError(f"{name}: argument '{keyword.arg}' given more than once")
        arguments[keyword.arg] = _literal(keyword.value, f"{name}: argument '{keyword.arg}'", 0)
    return ToolCall(name=name, arguments=arguments)


def _literal(node: ast.AST, where: str, depth: int) -> Any:
    """The JSON-native value of a literal node; anything that is not a literal raises."""
    if depth > MAX_DEPTH:
        raise CallParseError(f"{where}: literal nested deeper than {MAX_DEPTH}")
    if isinstance(node, ast.Constant):
        return _constant(node.value, where)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = node.operand
        if isinstance(operand, ast.Constant) and _is_number(operand.value):
            value = _constant(operand.value, where)
            return -value if isinstance(node.op, ast.USub) else value
        raise CallParseError(f"{where}: a sign applies only to a number literal")
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item, where, depth + 1) for item in node.elts]
    if isinstance(node, ast.Set):
        items: list[Any] = []
        for item in node.elts:
            value = _literal(item, where, depth + 1)
            if isinstance(value, list | dict):
                raise CallParseError(f"{where}: a set cannot hold a list or dict")
            if value not in items:
                items.append(value)
        return items
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise CallParseError(f"{where}: **-unpacking is not allowed")
            key = _literal(key_node, where, depth + 1)
            if not isinstance(key, str):
                raise CallParseError(f"{where}: dict keys must be strings, got {key!r}")
            result[key] = _literal(value_node, where, depth + 1)
        return result
    raise CallParseError(f"{where}: {_describe(node)} is not a literal")


def json_scalar(value: Any) -> bool:
    """Whether `value` is a JSON scalar (None, a string, a bool, an int or a float); a float
    that is not finite raises ValueError naming it."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"non-finite number {value!r}")
    return value is None or isinstance(value, str | bool | int | float)


def _constant(value: Any, where: str) -> Any:
    try:
        scalar = json_scalar(value)
    except ValueError as error:
        raise CallParseError(f"{where}: {error}") from None
    if scalar:
        return value
    raise CallParseError(f"{where}: {type(value).__name__} literals are not allowed")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _describe(node: ast.AST) -> str:
    """A short human name for a syntax node, quoting its source."""
    kinds = {
        ast.Call: "a call",
        ast.Attribute: "an attribute access",
        ast.Name: "a name",
        ast.Lambda: "a lambda",
        ast.JoinedStr: "an f-string",
        ast.BinOp: "an operator expression",
        ast.Subscript: "a subscript",
        ast.Starred: "a starred expression",
    }
    kind = next((text for cls, text in kinds.items() if isinstance(node, cls)), None)
    return f"{kind or 'a ' + type(node).__name__} '{ast.unparse(node)[:80]}'"
