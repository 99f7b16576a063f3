"""Typed specs the CLI receives from the workflow (validated again here, not trusted)."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar, cast

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolcalib.jsonio import InputError, field_path

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Model and variant names become path components: no slashes, no spaces."""


class StrictModel(BaseModel):
    """The base of specs, options and configuration files (pydantic): unknown fields are
    errors, so a malformed one names its field; immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Options = TypeVar("Options", bound=BaseModel)


class ReleaseConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The fields every `benchmarks.<name>` config section shares: the pinned release wheel,
    fetched by name and checked by hash (`fetch`). Strict and immutable as `records.Record` is,
    not one (the `model` stage imports this module and needs no records). A benchmark's config
    record extends it with its `categories` (the ones it knows) and the fields of its settings
    records (`with_settings`); the config schema is generated from it (`config_schema`)."""

    package: str
    """The package the release wheel is fetched as (`fetch`), e.g. `bfcl-eval`."""
    version: str
    file: Annotated[str, msgspec.Meta(pattern=r"^[^/]+\.whl$")]
    """The wheel's file name under `results/raw/<benchmark>/`."""
    sha256: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


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


class ModelSpec(StrictModel):
    name: str = Field(pattern=NAME_PATTERN)
    backend: str
    options: dict[str, Any] = Field(default_factory=dict)
    """Backend-specific settings (they enter the model's identity)."""
    batch_size: int = Field(default=1, ge=1)
    """Conversations in flight at once (their steps reach the backend as one batch)."""
    max_failed_share: float = Field(default=0.0, ge=0, le=1)
    """Share of a generate job's cases whose requests may finally fail (after the backend's
    retries) and still let the job succeed, those cases excluded (outcome `error`); above it
    the job writes nothing and fails, so a rerun asks the failed requests again. 0: none."""


def parse_model_spec(text: str, origin: str = "--model-spec") -> ModelSpec:
    return parse_spec(ModelSpec, text, origin)


def parse_spec(model: type[Options], text: str, origin: str) -> Options:
    """A spec given as JSON text (`origin`: the argument it came from) as `model`; bad JSON
    or a bad field is an InputError naming the argument and the field."""
    try:
        return model.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(f"{origin}: not valid JSON ({exc.msg})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"{origin}: field '{field_path(first)}': {first['msg']}") from exc


def model_options(options_model: type[Options], spec: ModelSpec) -> Options:
    """A model entry's `options` as its options model (an InputError names the option)."""
    try:
        return options_model.model_validate(spec.options)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"model '{spec.name}': option '{field_path(first)}': "
                         f"{first['msg']}") from None
