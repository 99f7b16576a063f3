"""Typed specs the CLI receives from the workflow (validated again here, not trusted)."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar, cast

import msgspec

from toolcalib.jsonio import InputError, error_at, from_data

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Model and variant names become path components: no slashes, no spaces."""
SHA256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
"""A sha256 hash as hex digits."""


class StrictModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The base of specs, options, configuration files and labelled corpus rows: a msgspec
    struct, strict and immutable as `records.Record` is, not one (the `model` stage imports
    this module and needs no records). Unknown fields are errors, so a malformed one names its
    field. Values are checked where they are read (`jsonio.from_data`, `parse_spec`), not when
    code builds one; a subclass says `kw_only=True` again (msgspec does not inherit it)."""


Options = TypeVar("Options", bound=StrictModel)


class ReleaseConfig(StrictModel, frozen=True, kw_only=True):
    """The fields every `benchmarks.<name>` config section shares: the pinned release wheel,
    fetched by name and checked by hash (`fetch`). A benchmark's config record extends it with
    its `categories` (the ones it knows) and the fields of its settings records
    (`with_settings`); the config schema is generated from it (`config_schema`)."""

    package: str
    """The package the release wheel is fetched as (`fetch`), e.g. `bfcl-eval`."""
    version: str
    file: Annotated[str, msgspec.Meta(pattern=r"^[^/]+\.whl$")]
    """The wheel's file name under `results/raw/<benchmark>/`."""
    sha256: SHA256


def with_settings(name: str, base: type[ReleaseConfig],
                  *settings: type[msgspec.Struct]) -> type[ReleaseConfig]:
    """A benchmark's config record `name`: `base` and the fields of its settings records (the
    plugin's, e.g. `Benchmark.loop_settings`) as they declare them (type, bounds, default), so
    that a field is declared once."""
    fields: list[Any] = []
    for kind in settings:
        for info in msgspec.structs.fields(kind):
            if info.default is not msgspec.NODEFAULT:
                fields.append((info.name, info.type, info.default))
            elif info.default_factory is not msgspec.NODEFAULT:
                fields.append((info.name, info.type,
                               msgspec.field(default_factory=info.default_factory)))
            else:
                fields.append((info.name, info.type))
    return cast("type[ReleaseConfig]", msgspec.defstruct(
        name, fields, bases=(base,), module=base.__module__, frozen=True, kw_only=True))


class ModelSpec(StrictModel, frozen=True, kw_only=True):
    name: Annotated[str, msgspec.Meta(pattern=NAME_PATTERN)]
    backend: str
    options: dict[str, Any] = {}
    """Backend-specific settings (they enter the model's identity)."""
    batch_size: Annotated[int, msgspec.Meta(ge=1)] = 1
    """Conversations in flight at once (their steps reach the backend as one batch)."""
    max_failed_share: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.0
    """Share of a generate job's cases whose requests may finally fail (after the backend's
    retries) and still let the job succeed, those cases excluded (outcome `error`); above it
    the job writes nothing and fails, so a rerun asks the failed requests again. 0: none."""


def parse_model_spec(text: str, origin: str = "--model-spec") -> ModelSpec:
    return parse_spec(ModelSpec, text, origin)


def parse_spec(model: type[Options], text: str, origin: str) -> Options:
    """A spec given as JSON text (`origin`: the argument it came from) as `model`; bad JSON
    or a bad field is an InputError naming the argument and the field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{origin}: not valid JSON ({exc.msg})") from exc
    return from_data(data, model, origin, strict=False)


def model_options(options_model: type[Options], spec: ModelSpec) -> Options:
    """A model entry's `options` as its options model (an InputError names the option)."""
    try:
        return msgspec.convert(spec.options, options_model, strict=False)
    except msgspec.ValidationError as exc:
        option, message = error_at(exc, options_model)
        raise InputError(f"model '{spec.name}': option '{option}': {message}") from None
