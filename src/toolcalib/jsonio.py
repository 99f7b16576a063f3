"""Canonical JSON: sorted keys, stable bytes, atomic writes, errors that name file/line/field."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
"""A pydantic record class, or a plain view of `views` (pydantic is imported only for records:
the `evaluate` stage never imports it)."""


class InputError(ValueError):
    """Bad input: the message names the file, the line and the field."""


def dumps(obj: Any) -> str:
    """One canonical JSON text: no spaces, UTF-8 characters kept. A record keeps its field
    order and the source order of its payload objects, because that order carries meaning
    (BFCL's file system roots at the first key of `initial_config`; positional arguments are
    named by the order of a doc's properties); any other object gets sorted keys."""
    if _is_record(obj):
        data = obj.model_dump(mode="json")
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return _CANONICAL(obj)


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
"""`json.dumps` with `dumps`'s options, without building an encoder per call."""


def _is_record(obj: Any) -> bool:
    """A pydantic record (checked without importing pydantic, which a record's module did)."""
    return hasattr(obj, "model_dump") and hasattr(type(obj), "model_fields")


def sha256_bytes(data: bytes) -> str:
    import hashlib  # here: most stages never hash, and its import is a measurable start-up cost

    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    import hashlib

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
    """Rows as JSON Lines (`jsonlines`' writer with `dumps`), written atomically; the count."""
    import io

    import jsonlines

    buffer = io.StringIO()
    count = 0
    with jsonlines.Writer(buffer, dumps=dumps) as writer:
        for row in rows:
            writer.write(row)
            count += 1
        text = buffer.getvalue()
    atomic_write_bytes(path, text.encode("utf-8"))
    return count


def write_json(path: str | Path, obj: Any) -> None:
    if _is_record(obj):
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
    return validate(raw, model, file, line)


def validate(raw: Any, model: type[T], file: str, line: int) -> T:
    """`raw` (one parsed line) as `model`; failures raise InputError naming file:line, field."""
    from pydantic import ValidationError

    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"{file}:{line}: field '{field_path(first)}': {first['msg']}"
            f" ({len(exc.errors())} error(s) in {model.__name__})"
        ) from exc


def iter_records(path: str | Path, model: type[T]) -> Iterator[T]:
    """Each record of a JSONL file; a plain view (`views.VIEWS`) is read with `views.read_views`."""
    from toolcalib import views

    if model in views.VIEWS:
        yield from views.read_views(path, model)
        return
    import jsonlines

    file = str(path)
    with open(path, encoding="utf-8") as handle:
        lines = _Numbered(handle)
        reader = jsonlines.Reader(lines, loads=json.loads)
        try:
            for raw in reader.iter(skip_empty=True):
                yield validate(raw, model, file, lines.number)
        except jsonlines.InvalidLineError as exc:
            cause = exc.__cause__
            where = (f"{cause.msg} at column {cause.colno}"
                     if isinstance(cause, json.JSONDecodeError) else str(exc).split(" (line")[0])
            raise InputError(f"{file}:{exc.lineno}: not valid JSON ({where})") from exc


class _Numbered:
    """The lines of a text file, counting them: `number` is the last line's (1-based), so a
    record `jsonlines` yields can be named by its line."""

    def __init__(self, handle: Iterable[str]) -> None:
        self.handle = iter(handle)
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self.handle)
        self.number += 1
        return line


def read_records(path: str | Path, model: type[T]) -> list[T]:
    return list(iter_records(path, model))
