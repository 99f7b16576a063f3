"""Canonical JSON (stable bytes: a record in its field order, any other object with sorted
keys), atomic writes, errors that name file/line/field.

Records (`records.Record`, msgspec structs) are read line by line with msgspec's decoder for
their class: one pass that parses and checks. A line msgspec cannot hold as JSON (a number
beyond 64 bits, `NaN`, `Infinity`: JSON as Python's `json` reads and writes it) is read by
`json` and converted with the same checks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import msgspec

T = TypeVar("T")
"""A record class (`records.Record`, or any msgspec struct: a spec, a corpus row)."""


class InputError(ValueError):
    """Bad input: the message names the file, the line and the field."""


def dumps(obj: Any) -> str:
    """One canonical JSON text: no spaces, UTF-8 characters kept. A record keeps its field
    order and the source order of its payload objects, because that order carries meaning
    (BFCL's file system roots at the first key of `initial_config`; positional arguments are
    named by the order of a doc's properties); any other object gets sorted keys."""
    if isinstance(obj, msgspec.Struct):
        return _RECORD(builtins(obj))
    return _CANONICAL(obj)


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
"""`json.dumps` with `dumps`'s options, without building an encoder per call."""
_RECORD_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                                  allow_nan=False).encode


def _RECORD(data: Any) -> str:  # noqa: N802 - an encoder, as `_CANONICAL`
    """A record's fields as JSON, in order; a float that is not finite is written `null`."""
    try:
        return _RECORD_STRICT(data)
    except ValueError:
        return _RECORD_STRICT(_finite(data))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _raw_value(obj: Any) -> Any:
    if isinstance(obj, msgspec.Raw):
        return json.loads(bytes(obj))
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def builtins(record: Any, omit_defaults: bool = False) -> Any:
    """A record as plain JSON values (dicts in field order, lists, strings, numbers); raw JSON
    (`msgspec.Raw`) decoded. `omit_defaults`: without fields that hold their default, at every
    depth."""
    if not omit_defaults:
        data = msgspec.to_builtins(record, enc_hook=_raw_value)
        if isinstance(record, msgspec.Struct) and _plan(type(record)) != ((), ()):
            _omit_defaults(record, data)
        return data
    if isinstance(record, msgspec.Struct):
        out = {}
        for field in _fields(type(record)):
            value = getattr(record, field.name)
            default = field_default(field)
            if default is msgspec.NODEFAULT or value != default:
                out[field.encode_name] = builtins(value, True)
        return out
    if isinstance(record, list | tuple):
        return [builtins(item, True) for item in record]
    if isinstance(record, dict):
        return {key: builtins(item, True) for key, item in record.items()}
    return builtins(record) if isinstance(record, msgspec.Raw) else record


@cache
def _fields(cls: type) -> tuple[Any, ...]:
    return msgspec.structs.fields(cls)


def field_default(field: msgspec.structs.FieldInfo) -> Any:
    """A struct field's default (a new one from its factory); `NODEFAULT` where it has none."""
    return (field.default_factory() if field.default_factory is not msgspec.NODEFAULT
            else field.default)


@cache
def _plan(cls: type) -> tuple[tuple[tuple[str, str, Any], ...], tuple[tuple[str, str], ...]]:
    """What `builtins` leaves out of a record class's JSON: its `omitted_at_default` fields
    (attribute, key, default), and the fields to look into for records that have some."""
    omitted = getattr(cls, "omitted_at_default", ())
    fields = _fields(cls)
    leave = tuple((f.name, f.encode_name, field_default(f)) for f in fields if f.name in omitted)
    look = tuple((f.name, f.encode_name) for f in fields
                 if any(_plan(inner) != ((), ()) for inner in _records_in(f.type)))
    return leave, look


def _records_in(kind: Any) -> set[type]:
    """The record classes a field's type holds (in lists, dicts, unions)."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return {kind}
    return {found for arg in getattr(kind, "__args__", ()) for found in _records_in(arg)}


def _omit_defaults(value: Any, data: Any) -> None:
    """Drop from `data` (`value` as `to_builtins` gave it) what `_plan` leaves out."""
    if isinstance(value, msgspec.Struct):
        leave, look = _plan(type(value))
        for name, key, default in leave:
            if getattr(value, name) == default:
                del data[key]
        for name, key in look:
            _omit_defaults(getattr(value, name), data[key])
    elif isinstance(value, list | tuple):
        for item, item_data in zip(value, data, strict=True):
            _omit_defaults(item, item_data)
    elif isinstance(value, dict):
        for key, item in value.items():
            _omit_defaults(item, data[key])


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
    """Rows as JSON Lines (`jsonlines`' writer with `dumps`), written atomically; the count. A
    record's line is read back as its class before anything is written (msgspec does not
    check the values a record is built with), so a stage never writes a line the next one
    rejects."""
    import io

    import jsonlines

    buffer = io.StringIO()
    count = 0

    def checked(row: Any) -> str:
        line = dumps(row)
        if isinstance(row, msgspec.Struct):
            parse_line(line, type(row), str(path), f"{count + 1} (being written)")
        return line

    with jsonlines.Writer(buffer, dumps=checked) as writer:
        for row in rows:
            writer.write(row)
            count += 1
        text = buffer.getvalue()
    atomic_write_bytes(path, text.encode("utf-8"))
    return count


def write_json(path: str | Path, obj: Any) -> None:
    if isinstance(obj, msgspec.Struct):
        obj = builtins(obj)
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))


_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def decoder(model: type[T]) -> msgspec.json.Decoder[T]:
    """msgspec's decoder for `model`, built once per class."""
    found = _DECODERS.get(model)
    if found is None:
        found = _DECODERS[model] = msgspec.json.Decoder(model)
    return found


_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_NAMED = re.compile(r"^Object (?:missing required|contains unknown) field `(?P<name>[^`]*)`")
_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def error_at(exc: msgspec.ValidationError, model: type) -> tuple[str, str]:
    """(the field, what is wrong) of a value msgspec rejected as `model`: the field as a dotted
    path (`turns.0.steps.1.emission.parse`; `<record>`: the value as a whole); a value outside
    a `Literal`, with the values allowed."""
    found = _AT.match(str(exc))
    assert found is not None
    message, path = found["message"], found["path"] or ""
    parts = [key or index for key, index in _PART.findall(path)]
    if named := _NAMED.match(message):
        parts.append(named["name"])
    elif message.startswith("Invalid enum value") and (allowed := _literals(model, parts)):
        message += f" (allowed: {', '.join(map(str, allowed))})"
    return ".".join(parts) or "<record>", message


def _literals(kind: Any, parts: list[str]) -> tuple[Any, ...]:
    """The values of the `Literal` at `parts` (field names, item indexes) in type `kind`, in
    declared order; () where there is none."""
    while get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    if not parts:
        if get_origin(kind) is Literal:
            return get_args(kind)
        return next((found for arm in get_args(kind) if (found := _literals(arm, []))), ())
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        fields = {field.encode_name: field.type for field in _fields(kind)}
        return _literals(fields[parts[0]], parts[1:]) if parts[0] in fields else ()
    if get_origin(kind) in (list, tuple, dict):
        items = [arg for arg in get_args(kind) if arg is not Ellipsis]
        return _literals(items[-1], parts[1:]) if items else ()
    return next((found for arm in get_args(kind) if (found := _literals(arm, parts))), ())


def field_error(exc: msgspec.ValidationError, model: type, where: str) -> InputError:
    """The `InputError` of a value msgspec rejected: `where` is "file:line" (or the argument
    the value came from), the field a dotted path (`error_at`)."""
    loc, message = error_at(exc, model)
    return InputError(f"{where}: field '{loc}': {message} (in {model.__name__})")


def from_data(data: Any, model: type[T], where: str, strict: bool = True) -> T:
    """`data` (decoded JSON or YAML) as `model`, checked: a bad value is an `InputError` naming
    `where` and the field (`field_error`). Not `strict`: an integral float is an integer and a
    numeric string a number (a spec's fields and options, as the config gives them)."""
    try:
        return msgspec.convert(data, model, strict=strict)
    except msgspec.ValidationError as exc:
        raise field_error(exc, model, where) from None


def parse_line(text: str | bytes, model: type[T], file: str, line: int | str) -> T:
    """One JSON line as `model`; failures raise `InputError` naming file:line and the field."""
    where = f"{file}:{line}"
    try:
        return decoder(model).decode(text)
    except msgspec.ValidationError as exc:
        if "out of range" not in str(exc):
            raise field_error(exc, model, where) from None
    except msgspec.DecodeError:
        pass
    try:  # what msgspec's JSON cannot hold (see the module's docstring), or no JSON at all
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    try:
        return msgspec.convert(raw, model)
    except msgspec.ValidationError as exc:
        raise field_error(exc, model, where) from None


def iter_records(path: str | Path, model: type[T]) -> Iterator[T]:
    """Each record of a JSONL file (blank lines skipped)."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.isspace():
                yield parse_line(line, model, str(path), number)


def read_records(path: str | Path, model: type[T]) -> list[T]:
    return list(iter_records(path, model))


class RecordIndex(Mapping[str, T]):
    """A JSONL file's records by a string field (`key`), each decoded and checked as `model`
    when first asked for: a reader that needs some of them decodes only those. Reading the
    file decodes the keys alone (msgspec skips the rest of a line, checking its syntax); a line
    without its key, or not JSON, is an `InputError` then; a bad value when its record is
    asked for. A key seen twice: the last line's."""

    def __init__(self, path: str | Path, model: type[T], key: str) -> None:
        self.path, self.model = str(path), model
        self._lines: dict[str, tuple[int, bytes]] = {}
        self._records: dict[str, T] = {}
        keys = _key_struct(key)
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.isspace():
                    found = getattr(parse_line(line, keys, self.path, number), key)
                    self._lines[found] = (number, line)

    def __getitem__(self, key: str) -> T:
        record = self._records.get(key)
        if record is None:
            number, line = self._lines[key]
            record = self._records[key] = parse_line(line, self.model, self.path, number)
        return record

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


@cache
def _key_struct(key: str) -> type:
    return msgspec.defstruct(f"Key_{key}", [(key, str)])
