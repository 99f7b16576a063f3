"""One module per pipeline stage, each with `run(...)`: read the stage's inputs, run the core,
write its outputs atomically with rows in a stable order (same inputs, same bytes).

A stage's arguments are declared once, by its `run`'s signature: each parameter is an option
(`model_spec` -> `--model-spec`), required without a default; its type says how it reads (`int`,
`bool`: a flag, a sequence: one or more values, none allowed where the default is `()`), and
its `Annotated` metadata (`Arg`) gives the help text and, where one argument's text is read
otherwise, the function reading it. `add_arguments` derives the command's parser from it, so
the CLI's call is the signature's by construction.

The CLI imports only the stage it runs, so each stage's code closure is exact (see
`pipeline.codedeps`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints


def log(message: str) -> None:
    print(f"[toolcalib] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Arg:
    """How a parameter of a stage's `run` reads from the command line (`Annotated` metadata):
    its help text, and `parse`, which reads the value from the argument's text (else its
    type does)."""

    help: str | None = None
    parse: Callable[[str], Any] | None = None


def case_ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not all(ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError("case ids must be non-empty and distinct")
    return ids


def json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def json_list(text: str) -> list[Any]:
    value = json.loads(text)
    if not isinstance(value, list):
        raise argparse.ArgumentTypeError("expected a JSON list")
    return value


def limit(text: str) -> int | None:
    if text == "all":
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("limit must be a non-negative integer or 'all'")
    return value


Limit = Annotated[int | None, Arg("first N cases (0: none), or 'all' (default)", limit)]
CaseIds = Annotated[list[str] | None, Arg("comma-separated case ids to run (in file order) "
                                          "instead of --limit", case_ids)]
JudgeSpec = Annotated[str | None, Arg("JSON: the judge model, as --model-spec (profile `judge`)")]
JudgeStore = Annotated[str | None, Arg("response store folder (profile `judge`)")]


def add_arguments(parser: argparse.ArgumentParser, run: Callable[..., object]) -> None:
    """One option per parameter of `run` (see the module's docstring)."""
    hints = get_type_hints(run, include_extras=True)
    for name, parameter in inspect.signature(run).parameters.items():
        kind, arg = hints[name], Arg()
        if get_origin(kind) is Annotated:
            kind, *extras = get_args(kind)
            arg = next((extra for extra in extras if isinstance(extra, Arg)), arg)
        if get_origin(kind) in (Union, UnionType):  # `X | None`: X
            kind = next(k for k in get_args(kind) if k is not NoneType)
        required = parameter.default is inspect.Parameter.empty
        options: dict[str, Any] = {"help": arg.help, "required": required}
        if not required:
            options["default"] = parameter.default
        if arg.parse is not None:
            options["type"] = arg.parse
        elif kind is bool:
            options["action"] = "store_true"
        elif kind is int:
            options["type"] = int
        elif get_origin(kind) in (list, tuple, Sequence):
            options["nargs"] = "*" if parameter.default == () else "+"
        parser.add_argument("--" + name.replace("_", "-"), **options)
