"""Column specs: one `TableSpec` per output table, from which its polars schema, its writers'
column order, its rows' key check and its report labels are generated.

Standard library only (`rows`, and through it `evaluate`, must not import polars):
`TableSpec.schema` imports polars when it is called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from toolcalib.jsonio import InputError

if TYPE_CHECKING:
    import polars as pl

Dtype = Literal["str", "int", "float", "bool"]
"""A column's type: polars String, Int64, Float64 or Boolean."""
DTYPES: tuple[Dtype, ...] = get_args(Dtype)
TABLE_KEY = "toolcalib:table"
VERSION_KEY = "toolcalib:schema_version"
"""The keys of a table's name and `schema_version` in its file's metadata (`TableSpec.metadata`)."""


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, type and, where the report shows it, its label."""

    name: str
    dtype: Dtype = "str"
    label: str | None = None


@dataclass(frozen=True)
class TableSpec:
    """A table's columns, in order, and the version of that layout (`schema_version`: raised
    whenever a column is added, removed, renamed, retyped or changes meaning)."""

    name: str
    schema_version: int
    columns: tuple[Column, ...]
    _index: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {column.name: column for column in self.columns}
        if len(index) != len(self.columns):
            seen = [column.name for column in self.columns]
            twice = sorted({name for name in seen if seen.count(name) > 1})
            raise ValueError(f"table {self.name}: column(s) {twice} named twice")
        bad = [column.name for column in self.columns if column.dtype not in DTYPES]
        if bad:
            raise ValueError(f"table {self.name}: column(s) {bad} have no type of {DTYPES}")
        object.__setattr__(self, "_index", index)

    @property
    def names(self) -> list[str]:
        """The column names, in the table's order (every writer's order)."""
        return list(self._index)

    def column(self, name: str) -> Column:
        """The column `name`; an unknown name fails, naming the table and its columns."""
        found = self._index.get(name)
        if found is None:
            raise ValueError(f"table {self.name} has no column {name!r}; "
                             f"its columns: {self.names}")
        return found

    def schema(self) -> dict[str, pl.DataType]:
        """The polars schema: name -> dtype, in order."""
        import polars as pl

        types: dict[Dtype, pl.DataType] = {"str": pl.String(), "int": pl.Int64(),
                                            "float": pl.Float64(), "bool": pl.Boolean()}
        return {column.name: types[column.dtype] for column in self.columns}

    def labels(self) -> dict[str, str]:
        """name -> report label of the labelled columns, in order."""
        return {c.name: c.label for c in self.columns if c.label is not None}

    def row(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """`values` as one row of the table, in column order; a missing or unknown column
        fails, naming both."""
        if values.keys() != self._index.keys():
            missing = sorted(self._index.keys() - values.keys())
            unknown = sorted(values.keys() - self._index.keys())
            raise ValueError(f"a row of table {self.name}: missing column(s) {missing}, "
                             f"unknown column(s) {unknown}")
        return {name: values[name] for name in self._index}

    def metadata(self) -> dict[str, str]:
        """What a file of the table carries where its format has a slot for it (Parquet's
        key-value metadata): the table's name and `schema_version`."""
        return {TABLE_KEY: self.name, VERSION_KEY: str(self.schema_version)}

    def check(self, where: str, columns: Sequence[str], metadata: Mapping[str, str]) -> None:
        """Fail unless a table read from `where` is this one, at this version, with these
        columns in order."""
        found = metadata.get(TABLE_KEY), metadata.get(VERSION_KEY)
        if found != (self.name, str(self.schema_version)):
            held = "no table name or version" if found == (None, None) else (
                f"table {found[0]} schema_version {found[1]}")
            raise InputError(f"{where}: {held} in its metadata, expected table {self.name} "
                             f"schema_version {self.schema_version}")
        if list(columns) != self.names:
            raise InputError(f"{where}: columns {list(columns)}, expected {self.names}")

    def derive(self, name: str, schema_version: int, before: Iterable[Column] = (),
               renames: Mapping[str, str] | None = None) -> TableSpec:
        """Another table with `before`, then these columns (some renamed by `renames`)."""
        renames = renames or {}
        unknown = sorted(set(renames) - self._index.keys())
        if unknown:
            raise ValueError(f"table {self.name} has no column(s) {unknown} to rename")
        columns = (replace(c, name=renames.get(c.name, c.name)) for c in self.columns)
        return TableSpec(name, schema_version, (*before, *columns))
