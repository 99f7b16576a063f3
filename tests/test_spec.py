"""Column specs: the schema, the order and the row check every output table is generated from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from toolcalib.jsonio import InputError
from toolcalib.metrics.inputs import read_parquet_table
from toolcalib.metrics.rows import CASES, TRIPLES
from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.metrics.write import parquet_bytes

SPEC = TableSpec("t", 3, (Column("a"), Column("b", "int", "B"), Column("c", "float"),
                          Column("d", "bool")))


def test_schema_and_order() -> None:
    assert SPEC.names == ["a", "b", "c", "d"]
    assert SPEC.schema() == {"a": pl.String(), "b": pl.Int64(), "c": pl.Float64(),
                             "d": pl.Boolean()}
    assert SPEC.labels() == {"b": "B"}
    assert list(SPEC.row({"d": True, "c": 1.0, "b": 2, "a": "x"})) == SPEC.names


def test_unknown_or_missing_column_fails() -> None:
    with pytest.raises(ValueError, match=r"table t has no column 'z'.*\['a', 'b', 'c', 'd'\]"):
        SPEC.column("z")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['d'\], unknown column\(s\) "
                                         r"\['z'\]"):
        SPEC.row({"a": "x", "b": 1, "c": 1.0, "z": 0})
    with pytest.raises(ValueError, match=r"no column\(s\) \['z'\] to rename"):
        SPEC.derive("u", 1, renames={"z": "y"})


def test_bad_specs_fail() -> None:
    with pytest.raises(ValueError, match=r"column\(s\) \['a'\] named twice"):
        TableSpec("t", 1, (Column("a"), Column("a", "int")))
    with pytest.raises(ValueError, match=r"column\(s\) \['a'\] have no type"):
        TableSpec("t", 1, (Column("a", "text"),))  # type: ignore[arg-type]


def test_derive_renames_and_prefixes() -> None:
    derived = SPEC.derive("u", 2, (Column("k"),), {"b": "bee"})
    assert (derived.name, derived.schema_version) == ("u", 2)
    assert derived.names == ["k", "a", "bee", "c", "d"]
    assert derived.column("bee") == Column("bee", "int", "B")


def test_output_specs_hold_their_tables_layout() -> None:
    assert CASES.names[:5] == ["model", "variant", "benchmark", "category", "case_id"]
    assert TRIPLES.column("gar").label == "GAR" and TRIPLES.column("n_excluded").dtype == "int"
    assert all(TRIPLES.column(f"{rate}_k").dtype == "int" for rate in ("gar", "acc"))


def test_parquet_carries_and_checks_the_schema_version(tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": ["x"], "b": [1], "c": [0.5], "d": [True]}, schema=SPEC.schema())
    path = tmp_path / "t.parquet"
    path.write_bytes(parquet_bytes(frame, SPEC))
    assert read_parquet_table(path, SPEC).equals(frame)
    with pytest.raises(InputError, match="table t schema_version 3 in its metadata, expected "
                                         "table t schema_version 4"):
        read_parquet_table(path, replace(SPEC, schema_version=4))
    frame.write_parquet(path)
    with pytest.raises(InputError, match="no table name or version in its metadata"):
        read_parquet_table(path, SPEC)
    path.write_bytes(parquet_bytes(frame.drop("d"), SPEC))
    with pytest.raises(InputError, match=r"columns \['a', 'b', 'c'\], expected"):
        read_parquet_table(path, SPEC)
