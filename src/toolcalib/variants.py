"""Context variants: data that changes what the model sees, plus at most one probe in the loop.

- `baseline`: the benchmark's own protocol, unmodified.
- `system-permission`: a system message that explicitly allows asking and declining.
- `sri` / `sri-gate`: halt-seam state reconciliation (see `probes.halt_probe`).
- `cri-retry`: call-seam re-query before an unsupported call (see `probes.call_probe`).
- `no-tools-visible`: the same conversation with no tools offered; every gold `tool_call`
  becomes `refuse` (nothing can be done), `ask` stays `ask`. Measures the floor of over-calling.

A benchmark runs the variants its loop applies (`Benchmark.variants`, which its caller hands
to `refusal`: this module imports no benchmark), a published run replayed (backend `replay`)
only `baseline`; any other combination is refused (`refusal`) at config check and by
`generate`, never run under a label it does not earn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple

from toolcalib.records import NO_DOCS
from toolcalib.registry import pick

if TYPE_CHECKING:
    from toolcalib.records import Case, Message

PERMISSION_PROMPT = (
    "You may ask the user for any information you need that they have not given you, and you "
    "may decline a request when none of the available tools can carry it out: say so plainly "
    "instead of guessing arguments or calling an unrelated tool."
)


class Variant(NamedTuple):
    name: str
    system_prompt: str | None = None
    """Prepended as a system message when set."""
    hide_tools: bool = False
    halt_probe: Literal["sri", "sri-gate"] | None = None
    call_probe: Literal["cri"] | None = None
    gold_map: Mapping[str, str] = MappingProxyType({})
    """How the variant changes gold classes (e.g. no tools: tool_call -> refuse)."""

    def preamble(self) -> list[Message]:
        from toolcalib.records import Message

        return [Message(role="system", content=self.system_prompt)] if self.system_prompt else []

    def adjust_case(self, case: Case) -> Case:
        """The case as this variant presents it (tools hidden, gold classes remapped)."""
        case = self.adjust_gold(case)
        if not self.hide_tools:
            return case
        turns = [turn.replace(tools_added=[]) for turn in case.turns]
        return case.replace(tools_json=NO_DOCS, turns=turns)

    def adjust_gold(self, case: Case) -> Case:
        """The case with its gold classes as this variant presents them."""
        if not self.gold_map:
            return case
        turns = [turn.replace(gold_action=self.gold_map.get(turn.gold_action, turn.gold_action))
                 for turn in case.turns]
        return case.replace(turns=turns,
                            gold_action=self.gold_map.get(case.gold_action, case.gold_action))


VARIANTS = {v.name: v for v in (
    Variant("baseline"),
    Variant("system-permission", system_prompt=PERMISSION_PROMPT),
    Variant("sri", halt_probe="sri"),
    Variant("sri-gate", halt_probe="sri-gate"),
    Variant("cri-retry", call_probe="cri"),
    Variant("no-tools-visible", hide_tools=True, gold_map={"tool_call": "refuse"}),
)}


def get_variant(name: str) -> Variant:
    return pick("variant", VARIANTS, name)


REPLAY_VARIANTS = ("baseline",)
"""What a published run replayed (backend `replay`) runs: the context it was recorded in."""


def refusal(model: str, backend: str, variant: str, benchmark: str,
            applies: Sequence[str]) -> str | None:
    """Why `model` (its `backend`) cannot run `variant` on `benchmark`, whose loop applies the
    variants `applies` (`Benchmark.variants`), as one line; None when it can."""
    runs: Sequence[str]
    if backend == "replay":
        runs, who = REPLAY_VARIANTS, "backend 'replay'"
    else:
        runs, who = applies, benchmark
    if variant in runs:
        return None
    return (f"model {model!r}: variant {variant!r} does not run on benchmark {benchmark!r} "
            f"({who} runs: {', '.join(runs)})")
