"""The published method's structural reading of τ² gold classes, reported beside GAR.

GAR is the gold class among the classes emitted, on τ² as everywhere. The method's τ² tables
read three of the four classes partly from the trajectory's structure instead (its
calibration breakdown script), and this is that reading, per case (`structural_hit`):

- `refuse`: the trajectory makes no call to a tool τ² marks as a write
  (`case.environment["write_tools"]`): restraint, whatever the text says;
- `tool_call`: every reference action is matched (the scorer's `actions_matched`; the
  method's "no failed action check");
- `ask`: at least one kept emission of the trajectory is classed `ask` by the `paper` cue
  profile (`classify.paper`, whose reading the evaluate stage hands in), whichever profile the
  run classifies with;
- `confirm`: per write call, the write unit's confirm verdict, as GAR reads it
  (`metrics.confirm_rows`).

Each gold class of a case is read (a task is `refuse` or `tool_call`, and may also be `ask`:
`benchmarks.tau2.gold`). Where it differs from the published code: its ask detector is a
τ²-specific multi-label scan (its phrases plus any question that is not a greeting or a
closing), where here the `paper` profile's single class per emission decides. An unscored case
(an infrastructure outcome) has no reading (None).
"""

from __future__ import annotations

from typing import Any

from toolcalib.benchmarks.tau2.writes import kept_steps
from toolcalib.records import MODEL_OUTCOMES, ReadAlone


def _kept(trajectory: Any) -> list[Any]:
    """The emissions that are part of the conversation (a variant's dropped ones are not)."""
    return [step.emission for _, step in kept_steps(trajectory)]


def wrote(case: Any, trajectory: Any) -> bool:
    """Whether the trajectory calls any of the case's write tools."""
    writes = set(case.environment.get("write_tools") or ())
    return any(call.name in writes for emission in _kept(trajectory)
               for call in emission.tool_calls)


def asked(trajectory: Any, reads: ReadAlone) -> bool:
    """Whether `reads` classes some kept emission `ask`."""
    return any(reads(emission) == "ask" for emission in _kept(trajectory))


def actions_matched(score: Any) -> bool | None:
    """Every reference action matched (none failed), from the scorer's details; None without
    them."""
    matched = (score.details or {}).get("actions_matched")
    return None if matched is None else all(matched)


def structural_hits(case: Any, trajectory: Any, score: Any,
                    reads: ReadAlone) -> dict[str, bool | None]:
    """The published structural reading of each of the case's gold classes (`case` with its
    gold as the trajectory's variant presents it; `reads`: the `paper` profile's reading)."""
    return {gold: structural_hit(gold, case, trajectory, score, reads)
            for gold in (case.gold_action, *case.gold_also)}


def structural_hit(gold: str, case: Any, trajectory: Any, score: Any,
                   reads: ReadAlone) -> bool | None:
    """The reading of gold class `gold`; None for an unscored case or a class without one."""
    if trajectory.outcome not in MODEL_OUTCOMES or not score.scored:
        return None
    if gold == "refuse":
        return not wrote(case, trajectory)
    if gold == "tool_call":
        return actions_matched(score)
    if gold == "ask":
        return asked(trajectory, reads)
    return None

