"""Run parsed calls on fresh BFCL simulated API instances, with BFCL's result strings.

Mirrors BFCL's `execute_multi_turn_func_call`, except that a call is dispatched by name to a
bound method with literal keyword arguments instead of `eval`-ing model text.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from toolcalib.benchmarks.bfcl.release import STATELESS_CLASSES, BfclRelease, pin_timezone

if TYPE_CHECKING:
    from toolcalib.records import ToolCall

BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
"""Names BFCL refuses to execute whatever they resolve to."""
ERROR_PREFIX = "Error during execution: "
TAGS = frozenset({"<dict>", "<tuple>", "<set>", "<float>", "<File>", "<Directory>"})
"""Single-key wrappers marking values JSON has no direct form for."""


class Environment:
    """Fresh instances of a case's API classes; state persists across `execute` calls."""

    def __init__(
        self,
        release: BfclRelease,
        involved_classes: list[str],
        initial_config: dict[str, Any],
        long_context: bool,
    ):
        pin_timezone()  # trading_bot formats timestamps in local time
        self.instances: dict[str, Any] = {}
        self.owners: dict[str, Any] = {}
        """Public method name -> the instance whose method it is (a later class's wins)."""
        for class_name in involved_classes:
            instance = release.api_class(class_name)()
            if class_name not in STATELESS_CLASSES:
                config = json_copy(initial_config.get(class_name, {}))
                instance._load_scenario(config, long_context=long_context)
            self.instances[class_name] = instance
            self.owners.update(dict.fromkeys(public_methods(instance), instance))

    def execute(self, call: ToolCall) -> str:
        """BFCL's result string for one call; every failure becomes an error string."""
        if call.name in BLOCKED_NAMES:
            return f"{ERROR_PREFIX}Function call {call.name} is not allowed."
        owner = self.owners.get(call.name)
        if owner is None:
            return f"{ERROR_PREFIX}name '{call.name}' is not defined"
        try:
            result = getattr(owner, call.name)(**arguments_copy(call.arguments))
        except Exception as exc:  # the simulated API's own failure is a result, as in BFCL
            return f"{ERROR_PREFIX}{exc}"
        return _result_text(result)

    def execute_all(self, calls: Iterable[ToolCall]) -> list[str]:
        return [self.execute(call) for call in calls]

    def state(self) -> dict[str, dict[str, Any]]:
        """Canonical snapshot: equal iff BFCL's attribute-by-attribute comparison is equal."""
        return {class_name: self.class_state(class_name) for class_name in self.instances}

    def class_state(self, class_name: str) -> dict[str, Any]:
        """One instance's part of `state`: the checker stops at the first class that differs."""
        return {attr: snapshot(value) for attr, value in vars(self.instances[class_name]).items()
                if not attr.startswith("_")}


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (a case's `initial_config`: no shared parts, no tuples), many
    times faster than `copy.deepcopy` and 2-3x faster than a JSON round trip: the simulated APIs
    keep and mutate what they load."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


SCALARS = (str, int, float, bool, type(None))


def arguments_copy(arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments as the API may keep and mutate them: a deep copy, shallow when every
    value is a scalar (most calls; `copy.deepcopy` was most of the cost of executing)."""
    if all(type(value) in SCALARS for value in arguments.values()):
        return dict(arguments)
    return copy.deepcopy(arguments)


_PUBLIC_METHODS: dict[type, tuple[str, ...]] = {}


def public_methods(instance: Any) -> tuple[str, ...]:
    """The names of the instance's public bound methods, sorted (the set is the class's: found
    once per class; a method is looked up when a call runs, as BFCL's `eval` does)."""
    names = _PUBLIC_METHODS.get(type(instance))
    if names is None:
        names = tuple(name for name in dir(instance)  # sorted, as `inspect.getmembers`
                      if not name.startswith("_")
                      and isinstance(getattr(instance, name, None), types.MethodType))
        _PUBLIC_METHODS[type(instance)] = names
    return names


def _result_text(result: Any) -> str:
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # BFCL falls back to str() for anything json cannot encode
            return str(result)
    return str(result)


def snapshot(value: Any) -> Any:
    """A JSON value for `value`: two are equal iff the originals are `==` (NaN aside).

    Numbers collapse as Python compares them (True == 1 == 1.0, so bools become ints and
    integral floats ints); tuples, sets and dicts with non-string keys get tagged forms; BFCL's
    File and Directory keep only the fields their `__eq__` reads (never a Directory's parent).
    """
    kind = type(value)
    if kind is str or kind is int or value is None:  # the common exact types first (fast path)
        return value
    if kind is list:
        return [item if (type(item) is str or type(item) is int or item is None)  # as above
                else snapshot(item) for item in value]
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"<float>": repr(value)}
        return int(value) if value.is_integer() else value
    if isinstance(value, list):
        return [snapshot(item) for item in value]
    if isinstance(value, tuple):
        return {"<tuple>": [snapshot(item) for item in value]}
    if isinstance(value, set | frozenset):
        return {"<set>": sorted((snapshot(item) for item in value), key=_sort_key)}
    if isinstance(value, dict):
        tag_like = len(value) == 1 and bool(value.keys() & TAGS)
        plain = None if tag_like else _string_keyed(value)
        if plain is not None:
            return plain
        pairs = [[snapshot(key), snapshot(item)] for key, item in value.items()]
        return {"<dict>": sorted(pairs, key=lambda pair: _sort_key(pair[0]))}
    name = kind.__name__
    if name == "File":
        return {"<File>": {"name": snapshot(value.name), "content": snapshot(value.content)}}
    if name == "Directory":
        return {"<Directory>": {"name": snapshot(value.name), "contents": snapshot(value.contents)}}
    raise TypeError(f"no canonical snapshot for a {kind.__module__}.{name}")


def _string_keyed(value: dict[Any, Any]) -> dict[str, Any] | None:
    """The snapshot of a dict whose keys are all strings; None if one is not."""
    plain = {}
    for key, item in value.items():
        if not isinstance(key, str):
            return None
        kind = type(item)  # `snapshot`'s fast path inline: most values are strings and ints
        plain[key] = item if (kind is str or kind is int or item is None) else snapshot(item)
    return plain


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
