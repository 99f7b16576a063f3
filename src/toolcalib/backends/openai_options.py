"""The `openai` backend's options (see `openai`): a module of their own, so the config schema
is generated from them without importing the HTTP client."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolcalib.config import StrictModel


class OpenAIOptions(StrictModel):
    base_url: str
    model: str
    api_key_env: str | None = None
    max_concurrency: int = Field(default=4, ge=1, le=256)
    timeout_s: float = Field(default=600.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    backoff_s: float = Field(default=1.0, ge=0)
    max_tokens: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    seed: int | None = None
    tools_mode: Literal["native", "prompt"] = "native"
    context_window: int | None = Field(default=None, ge=1)
    """When set, a `length` finish with prompt + completion tokens reaching it is a
    ContextOverflow (the server ran out of context, not of `max_tokens`)."""
    weights_sha256: str | None = None
