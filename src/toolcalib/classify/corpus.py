"""Candidate rows for the labelled corpus: the distinct emissions of real-model trajectories.

Reads trajectory files only (never an action table, a metric or a classifier profile), so labels
written on the candidates are decided before any profile has seen them. Each candidate is what a
profile sees of the emission (`text`, `structured_calls`, `parse` and its turn's `context`, as in
a corpus row: the context as the classify stage builds it, `trajectory.turn_contexts`, from the
case as the trajectory's variant presents it), where it came from (`validation.Provenance`), and
how often the same emission occurs in the files read. Identical (text, structured_calls, parse)
emissions are kept once, at their first occurrence (with that occurrence's context); order: the
files in the order given, then case, turn and step.

Run as `python -m toolcalib.classify.corpus --trajectories T.jsonl... [--cases C.jsonl...] --out
candidates.jsonl` (not a pipeline stage: the corpus is labelled by hand from its output).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import msgspec

from toolcalib.classify.base import Context
from toolcalib.classify.trajectory import turn_contexts
from toolcalib.classify.validation import Provenance
from toolcalib.config import StrictModel
from toolcalib.jsonio import iter_records, write_jsonl
from toolcalib.records import Case, Emission, Parse, Trajectory
from toolcalib.variants import get_variant

WEIGHTS_KEYS = ("gguf_sha256", "weights_sha256")
"""Identity keys that hold a model's weights hash, by backend (transformers, openai)."""


class Candidate(StrictModel, frozen=True, kw_only=True):
    """A distinct real emission, ready to be labelled."""

    id: str
    text: str
    structured_calls: bool
    parse: Literal["none", "ok", "malformed"]
    provenance: Provenance
    occurrences: int
    """How many emissions of the files read are identical to this one."""
    dropped: bool
    """The first occurrence was withdrawn by a variant's probe (classified all the same)."""
    context: Context
    """What the model saw at the first occurrence's turn (`classify.base.Context`): the user
    message(s) that opened it and the tools offered; from the trajectory alone (τ²'s user)
    where its case was not read."""


def emission_key(emission: Emission) -> tuple[str, bool, Parse]:
    """What a profile sees of an emission: the text, structured calls or not, the parse."""
    return emission.text, emission.structured and bool(emission.tool_calls), emission.parse


def contexts(trajectory: Trajectory, case: Case | None) -> dict[int, Context]:
    """Each turn's context (`trajectory.turn_contexts`), `case` as the trajectory's variant
    presents it; without the case, the simulated user's message alone, where recorded."""
    traces = {turn.index: turn for turn in trajectory.turns}
    if case is not None:
        return turn_contexts(get_variant(trajectory.variant).adjust_case(case), traces)
    return {index: Context(user=() if trace.user is None else (trace.user,))
            for index, trace in traces.items()}


def candidates(trajectories: Iterable[Trajectory],
               cases: Mapping[tuple[str, str], Case]) -> list[Candidate]:
    """The distinct emissions of `trajectories`, first occurrence first (module docstring);
    `cases` by (benchmark, case id)."""
    found: dict[tuple[str, bool, Parse], Candidate] = {}
    for trajectory in trajectories:
        weights = next((trajectory.model_identity[k] for k in WEIGHTS_KEYS
                        if k in trajectory.model_identity), None)
        seen = contexts(trajectory, cases.get((trajectory.benchmark, trajectory.case_id)))
        for turn in trajectory.turns:
            for step in turn.steps:
                key = emission_key(step.emission)
                if key in found:
                    found[key] = msgspec.structs.replace(
                        found[key], occurrences=found[key].occurrences + 1)
                    continue
                where = Provenance(
                    model=trajectory.model, variant=trajectory.variant,
                    benchmark=trajectory.benchmark, category=trajectory.category,
                    case=trajectory.case_id, turn=turn.index, step=step.index,
                    weights_sha256=weights)
                found[key] = Candidate(
                    id=where.row_id(), text=key[0], structured_calls=key[1], parse=key[2],
                    provenance=where, occurrences=1, dropped=step.dropped,
                    context=seen[turn.index])
    return list(found.values())


def read_candidates(trajectory_files: Iterable[str | Path],
                    case_files: Iterable[str | Path]) -> list[Candidate]:
    """`candidates` of trajectory files, contexts from case files (either may be empty)."""
    cases = {(case.benchmark, case.id): case
             for path in case_files for case in iter_records(path, Case)}
    trajectories = (t for path in trajectory_files for t in iter_records(path, Trajectory))
    return candidates(trajectories, cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolcalib.classify.corpus",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", nargs="+", required=True)
    parser.add_argument("--cases", nargs="*", default=[],
                        help="case files: each candidate gets its turn's context")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    found = read_candidates(args.trajectories, args.cases)
    write_jsonl(args.out, found)
    total = sum(candidate.occurrences for candidate in found)
    print(f"{len(found)} distinct emissions of {total} in {len(args.trajectories)} file(s)"
          f" -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
