"""The `openai` backend's options (see `openai`): a module of their own, so the config schema
is generated from them without importing the HTTP client."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from toolcalib.config import StrictModel


class OpenAIOptions(StrictModel, frozen=True, kw_only=True):
    base_url: str
    model: str
    api_key_env: str | None = None
    max_concurrency: Annotated[int, Meta(ge=1, le=256)] = 4
    timeout_s: Annotated[float, Meta(gt=0)] = 600.0
    max_retries: Annotated[int, Meta(ge=0)] = 5
    backoff_s: Annotated[float, Meta(ge=0)] = 1.0
    max_tokens: Annotated[int, Meta(ge=1)] = 512
    temperature: Annotated[float, Meta(ge=0)] = 0.0
    seed: int | None = None
    tools_mode: Literal["native", "prompt"] = "native"
    context_window: Annotated[int, Meta(ge=1)] | None = None
    """When set, a `length` finish with prompt + completion tokens reaching it is a
    ContextOverflow (the server ran out of context, not of `max_tokens`)."""
    weights_sha256: str | None = None
