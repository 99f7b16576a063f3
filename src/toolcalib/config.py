"""Typed specs the CLI receives from the workflow (validated again here, not trusted)."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar, get_args, get_origin

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from toolcalib.jsonio import InputError, field_path

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Model and variant names become path components: no slashes, no spaces."""


class StrictModel(BaseModel):
    """The base of specs, options and configuration files (pydantic): unknown fields are
    errors, so a malformed one names its field; immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Options = TypeVar("Options", bound=BaseModel)


class ReleaseConfig(StrictModel):
    """The fields every `benchmarks.<name>` config section shares: the pinned release wheel,
    fetched by name and checked by hash (`fetch`). A benchmark's config model extends it with
    its `categories` (the ones it knows) and options of its own."""

    package: str
    """The package the release wheel is fetched as (`fetch`), e.g. `bfcl-eval`."""
    version: str
    file: str = Field(pattern=r"^[^/]+\.whl$")
    """The wheel's file name under `results/raw/<benchmark>/`."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


BOUNDS = ("ge", "gt", "le", "lt")
"""The bounds of a settings record's field (`msgspec.Meta`) its config field keeps."""


def with_settings(name: str, base: type[ReleaseConfig],
                  *settings: type[msgspec.Struct]) -> type[ReleaseConfig]:
    """A benchmark's config model `name`: `base` and the fields of its settings records (the
    plugin's, e.g. `Benchmark.loop_settings`), each with the record's type, default and
    bounds, so that a field is declared once."""
    fields: dict[str, Any] = {}
    for record in settings:
        for info in msgspec.structs.fields(record):
            kind, bounds = info.type, {}
            if get_origin(kind) is Annotated:
                kind, *metas = get_args(kind)
                bounds = {key: getattr(meta, key) for meta in metas for key in BOUNDS
                          if getattr(meta, key) is not None}
            if info.default is not msgspec.NODEFAULT:
                bounds["default"] = info.default
            elif info.default_factory is not msgspec.NODEFAULT:
                bounds["default_factory"] = info.default_factory
            fields[info.name] = (kind, Field(**bounds))
    model: type[ReleaseConfig] = create_model(name, __base__=base, __module__=base.__module__,
                                              **fields)
    return model


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
