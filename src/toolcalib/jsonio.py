"""Canonical JSON: sorted keys, stable bytes, atomic writes, errors that name file/line/field."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)


class InputError(ValueError):
    """Bad input: the message names the file, the line and the field."""


def dumps(obj: Any) -> str:
    """One canonical JSON text: no spaces, UTF-8 characters kept. A record keeps its field
    order and the source order of its payload objects, because that order carries meaning
    (BFCL's file system roots at the first key of `initial_config`; positional arguments are
    named by the order of a doc's properties); any other object gets sorted keys."""
    if isinstance(obj, BaseModel):
        data = obj.model_dump(mode="json")
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write_bytes(path: str | Path, data: bytes, durable: bool = True) -> None:
    """Write via a temporary file and rename, so no half-written file is ever seen; `durable`:
    sync the data to disk before the rename, so that it survives an OS crash too."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    lines = [dumps(row) + "\n" for row in rows]
    atomic_write_bytes(path, "".join(lines).encode("utf-8"))
    return len(lines)


def write_json(path: str | Path, obj: Any) -> None:
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))


def field_path(error: dict[str, Any]) -> str:
    return ".".join(str(part) for part in error.get("loc", ())) or "<record>"


def parse_line(text: str, model: type[T], file: str, line: int) -> T:
    """Validate one JSON line as `model`; failures raise InputError naming file:line and field."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file}:{line}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"{file}:{line}: field '{field_path(first)}': {first['msg']}"
            f" ({len(exc.errors())} error(s) in {model.__name__})"
        ) from exc


def parse_view(text: str, model: type[T], file: str, line: int) -> T:
    """`parse_line` for a model that ignores unknown fields: the JSON is parsed and validated in
    one pass, and fields the model lacks are skipped without being built."""
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise InputError(f"{file}:{line}: not valid JSON ({first['msg']})") from exc
        raise InputError(
            f"{file}:{line}: field '{field_path(first)}': {first['msg']}"
            f" ({len(exc.errors())} error(s) in {model.__name__})"
        ) from exc


def iter_records(path: str | Path, model: type[T]) -> Iterator[T]:
    """Each record of a JSONL file; a model that ignores unknown fields (a view) is read
    with `parse_view`."""
    parse = parse_view if model.model_config.get("extra") == "ignore" else parse_line
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield parse(text, model, str(path), number)


def read_records(path: str | Path, model: type[T]) -> list[T]:
    return list(iter_records(path, model))
