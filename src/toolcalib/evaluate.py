"""Classify and score one category of a run (model, variant, benchmark).

Trajectories and cases are read as records (`records.Trajectory`, `records.Case`: decoded and
checked by msgspec in one pass each), a case line only when a trajectory of the file needs it
(`jsonio.RecordIndex`), each once; the gold file is read by the benchmark (`read_gold`). The
benchmark states facts (scores, write calls, its structural reading); the classifying is done
here, by the run's profile (action rows, each write's confirm verdict) and the `paper`
profile's reading handed to the structural reading, and the rows by `metrics`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from toolcalib.benchmarks import AnyBenchmark
from toolcalib.classify.base import Profile
from toolcalib.classify.paper import PaperProfile
from toolcalib.classify.profiles import read_alone
from toolcalib.classify.trajectory import action_rows
from toolcalib.jsonio import InputError, RecordIndex, read_records
from toolcalib.metrics.confirm_rows import confirm_rows
from toolcalib.records import Case, Trajectory
from toolcalib.variants import get_variant
from toolcalib.verdicts import Score

STRUCTURAL_PROFILE = PaperProfile.name
"""Whose reading of an emission alone a benchmark's structural reading reads (the published
method's cues: τ²'s `ask`), whichever profile the run classifies with."""


class Category(NamedTuple):
    """One category's inputs: the case, gold-trace and trajectory files."""

    cases: str
    gold: str
    trajectories: str


class Evaluated(NamedTuple):
    """One category's action rows (`action_rows` dicts) and scores, the cases it covers, the
    per-case rows beyond the cases' own (`write_units`), and the benchmark's structural
    reading of each case's gold classes by `metrics.rows.CASE_KEYS` tuple
    (`Benchmark.structural`; empty for a benchmark without one, as BFCL)."""

    actions: list[dict[str, Any]]
    scores: list[Score]
    cases: list[Case]
    units: list[dict[str, Any]]
    structural: dict[tuple[str, ...], dict[str, bool | None]] = {}


def matching(cases: str, trajectories: str) -> list[tuple[Case, Trajectory]]:
    """Each trajectory of a file with its case; an unknown case id is an input error."""
    by_id = RecordIndex(cases, Case, "id")  # a run may cover some of the cases only
    pairs = []
    for number, trajectory in enumerate(read_records(trajectories, Trajectory), start=1):
        if trajectory.case_id not in by_id:
            raise InputError(f"{trajectories}:{number}: field 'case_id': unknown case "
                             f"{trajectory.case_id!r}")
        pairs.append((by_id[trajectory.case_id], trajectory))
    return pairs


def evaluate(profile: Profile, benchmark: AnyBenchmark, source: str | Path,
             files: Category) -> Evaluated:
    """Action rows (the case as the trajectory's variant presents it: gold classes, and the
    tools its emissions' contexts name) and the benchmark's verdict of every trajectory of
    one category."""
    pairs = matching(files.cases, files.trajectories)
    golds = benchmark.read_gold(files.gold)
    profile.prepare([step.emission for _, trajectory in pairs for turn in trajectory.turns
                     for step in turn.steps])
    presented = [get_variant(trajectory.variant).adjust_case(case) for case, trajectory in pairs]
    actions = [row for shown, (_, trajectory) in zip(presented, pairs, strict=True)
               for row in action_rows(trajectory, shown, profile)]
    scores = [benchmark.score(str(source), case, trajectory, golds.get(case.id))
              for case, trajectory in pairs]
    units = [row for (case, trajectory), score in zip(pairs, scores, strict=True)
             for row in write_units(benchmark, profile, case, trajectory, score)]
    reads = read_alone(STRUCTURAL_PROFILE)
    structural: dict[tuple[str, ...], dict[str, bool | None]] = {
        (trajectory.model, trajectory.variant, shown.benchmark, shown.category, shown.id):
            reading
        for shown, (_, trajectory), score in zip(presented, pairs, scores, strict=True)
        if (reading := benchmark.structural(shown, trajectory, score, reads))}
    return Evaluated(actions, scores, [case for case, _ in pairs], units, structural)


def write_units(benchmark: AnyBenchmark, profile: Profile, case: Case, trajectory: Trajectory,
                score: Score) -> list[dict[str, Any]]:
    """The per-case rows of the trajectory's write calls (`Benchmark.writes`), each confirmed
    or not as `profile` says (`Profile.confirm_verdicts`; not asked where there is none)."""
    writes = benchmark.writes(case, trajectory)
    if not writes:
        return []
    verdicts = profile.confirm_verdicts([write.context for write in writes])
    return confirm_rows(case, trajectory, score, writes,
                        [verdict.confirmed for verdict in verdicts])
