"""Turn a backend's raw emission into the calls the harness will execute."""

from __future__ import annotations

from toolcalib.records import Emission


def decode_emission(raw: Emission) -> Emission:
    """Structured calls are taken as they are; text is left as text."""
    if raw.tool_calls:
        return raw.model_copy(update={"parse": "ok"})
    return raw
