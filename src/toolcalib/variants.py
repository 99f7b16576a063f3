"""Context variants: data that changes what the model sees, selected by name in config."""

from __future__ import annotations

from dataclasses import dataclass

from toolcalib.records import Message


@dataclass(frozen=True)
class Variant:
    name: str
    system_prompt: str | None = None
    """Prepended as a system message when set."""

    def preamble(self) -> list[Message]:
        return [Message(role="system", content=self.system_prompt)] if self.system_prompt else []


VARIANTS = {"baseline": Variant("baseline")}
"""`baseline` is the benchmark's own protocol, unmodified."""


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise KeyError(f"unknown variant '{name}' (known: {', '.join(sorted(VARIANTS))})")
    return VARIANTS[name]
