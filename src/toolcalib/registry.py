"""Registries by name: one lookup, one error for an unknown name.

A `Registry` maps names to `module:attr` references and imports one when asked for, so a
registered module's optional dependencies load only when it runs; `pick` looks a name up in a
table already in memory. Both name an unknown name the same way."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, TypeVar, cast

from toolcalib.jsonio import InputError

T = TypeVar("T")
V = TypeVar("V")


def unknown(kind: str, name: object, known: Iterable[str], where: str = "") -> InputError:
    """`[where: ]unknown <kind> '<name>' (known: a, b)`, the known names sorted."""
    prefix = f"{where}: " if where else ""
    return InputError(f"{prefix}unknown {kind} {name!r} (known: {', '.join(sorted(known))})")


def pick(kind: str, table: Mapping[str, V], name: object, where: str = "") -> V:
    """`table[name]`; an unknown name (also one that is no string: a config's missing or
    mistyped value) is an `InputError` (`unknown`)."""
    if name not in table or not isinstance(name, str):
        raise unknown(kind, name, table, where)
    return table[name]


class Registry(Mapping[str, str], Generic[T]):
    """Name -> `module:attr` (the mapping), each imported when `load`ed."""

    def __init__(self, kind: str, refs: Mapping[str, str]) -> None:
        self.kind = kind
        self._refs = dict(refs)

    def __getitem__(self, name: str) -> str:
        return self._refs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def module(self, name: str, where: str = "") -> str:
        """The module `name` is defined in (the workflow declares it among a job's sources)."""
        return pick(self.kind, self._refs, name, where).partition(":")[0]

    def load(self, name: str, where: str = "") -> T:
        """The object `name` refers to, imported now."""
        module, _, attr = pick(self.kind, self._refs, name, where).partition(":")
        return cast(T, getattr(importlib.import_module(module), attr))
