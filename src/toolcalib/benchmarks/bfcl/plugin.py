"""BFCL v4: multi-turn (base, long_context, miss_func, miss_param) and irrelevance sets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from toolcalib.benchmarks import (
    Benchmark,
    CaseSettings,
    ImportedRun,
    LoopSettings,
    Scripted,
    every_file,
)
from toolcalib.benchmarks.bfcl.checker import score_case
from toolcalib.benchmarks.bfcl.executor import Environment
from toolcalib.benchmarks.bfcl.gold import GoldTrace, case_environment, gold_trace, read_gold
from toolcalib.benchmarks.bfcl.normalize import (
    CATEGORIES,
    DOC_EXTRAS,
    MULTI_TURN,
    data_file,
    normalize_multi_turn,
    normalize_single_turn,
)
from toolcalib.benchmarks.bfcl.published import import_category, recorded_agreement
from toolcalib.benchmarks.bfcl.release import MAX_STEPS_PER_TURN, BfclRelease
from toolcalib.benchmarks.bfcl.runfiles import layout, model_folders
from toolcalib.jsonio import sha256_file
from toolcalib.registry import unknown
from toolcalib.variants import VARIANTS
from toolcalib.verdicts import Score

if TYPE_CHECKING:
    from toolcalib.backends.base import Backend, Policy
    from toolcalib.backends.replay import ReplayOptions
    from toolcalib.benchmarks import Replay
    from toolcalib.benchmarks.bfcl.replay import RecordedRun
    from toolcalib.records import Case, ReadAlone, Trajectory
    from toolcalib.writes import Write


def load_cases(release: BfclRelease, category: str) -> list[Case]:
    """All cases of one category, in the release's line order."""
    if category not in CATEGORIES:
        raise unknown("BFCL category", category, CATEGORIES)
    name = data_file(category)
    common = {"file": release.member(name), "artifact": release.wheel.name,
              "artifact_sha256": sha256_file(release.wheel)}
    if category in MULTI_TURN:
        return normalize_multi_turn(
            category, release.read_lines(name),
            release.read_lines(f"possible_answer/{name}"), release.func_docs,
            answer_file=release.member(f"possible_answer/{name}"), **common)
    return normalize_single_turn(category, release.read_lines(name), **common)


NO_SETTINGS = CaseSettings()
SCRIPTED = Scripted(max_steps=MAX_STEPS_PER_TURN, extras=DOC_EXTRAS)
"""BFCL's loop: its scripted turns with BFCL's step cap, its own members of the tool docs
marked (`DOC_EXTRAS`)."""


class Bfcl:
    name: str = "bfcl"
    version: str = "1"
    categories: tuple[str, ...] = CATEGORIES
    single_step: frozenset[str] = frozenset(CATEGORIES) - frozenset(MULTI_TURN)
    variants: tuple[str, ...] = tuple(VARIANTS)
    """Every variant: the scripted loop (`SCRIPTED`) applies each one's preamble, case
    adjustment and probe at BFCL's turns."""
    opens_as: Mapping[str, str] = {"multi_turn_long_context": "multi_turn_base",
                                   "multi_turn_miss_param": "multi_turn_base"}
    """Categories built from the base cases (same ids); most open with the base case's first
    turn (long_context 191 of 200, miss_param 114), so their first prompts repeat its."""
    embeds_cases: bool = False
    """A published run's cases are the release's (checked per record on import)."""
    case_settings: type[CaseSettings] = CaseSettings
    loop_settings: type[LoopSettings] = LoopSettings
    """No settings: the cases are the release's, the step cap BFCL's."""
    policies: Mapping[str, Policy] = {}

    def load_cases(self, source: str | Path, category: str,
                   settings: CaseSettings = NO_SETTINGS) -> list[Case]:
        return load_cases(BfclRelease(source), category)

    def environment(self, source: str | Path, case: Case) -> Environment:
        return case_environment(case, BfclRelease(source))

    def gold(self, source: str | Path, case: Case) -> GoldTrace:
        if not case.multi_step:
            return GoldTrace(case_id=case.id, category=case.category, turns=[])
        return gold_trace(case, BfclRelease(source))

    def gold_key(self, source: str | Path, case: Case) -> None:
        """None: a BFCL case's gold is never taken from another case's."""
        return None

    def gold_as(self, row: GoldTrace, case: Case) -> GoldTrace:
        raise NotImplementedError("BFCL gold is never reused (gold_key is None)")

    def read_gold(self, path: str | Path) -> Mapping[str, GoldTrace]:
        return read_gold(path)

    def score(self, source: str | Path, case: Case,
              trajectory: Trajectory,
              gold: GoldTrace | None) -> Score:
        score = score_case(case, trajectory, gold, _release(source))
        if trajectory.published is None or "reward" not in trajectory.published.recorded:
            return score
        return msgspec.structs.replace(score, details={
            **score.details, **recorded_agreement(trajectory.published.recorded, score)})

    def loop(self, settings: LoopSettings, user: Backend | None, source: str | Path,
             reads: ReadAlone) -> Scripted:
        """The scripted turns (`SCRIPTED`); no simulated user reads anything (`reads`)."""
        return SCRIPTED

    def import_run(self, source: str | Path, options: ReplayOptions, model: str, category: str,
                   cases: list[Case], settings: CaseSettings, replay: Replay) -> ImportedRun:
        """A published BFCL run (result files under `options.path`, `replay`): `cases` through
        the scripted turns (`replay`: under `baseline`, each step answered from the record)."""

        def run(selected: list[Case], backend: RecordedRun) -> Iterable[Trajectory]:
            return replay(selected, backend, lambda case: self.environment(source, case),
                          SCRIPTED)

        return import_category(source, options, model, category, cases, run)

    def published_models(self, options: ReplayOptions) -> list[str]:
        """Every model folder of a BFCL results folder (`model: '*'`)."""
        return model_folders(options.path)

    def published_files(self, options: ReplayOptions) -> list[str]:
        """The model's result and score folders' files (every file under `path` without
        `model`)."""
        if options.model is None:
            return every_file(options.path)
        folders = layout(options.path, options.model, options.score_path)
        return sorted(name for folder in (folders.result, folders.score) if folder is not None
                      for name in every_file(folder) if Path(name).exists())

    def writes(self, case: Case, trajectory: Trajectory) -> list[Write]:
        """None: no BFCL call needs the user's approval."""
        return []

    def structural(self, case: Case, trajectory: Trajectory, score: Score,
                   reads: ReadAlone) -> dict[str, bool | None]:
        """No reading: the published method has no structural reading of BFCL."""
        return {}


@cache
def _release(source: str | Path) -> BfclRelease:
    """One release object per wheel path, so scoring a run resolves and checks it once."""
    return BfclRelease(source)


BENCHMARK: Benchmark[GoldTrace, CaseSettings, LoopSettings] = Bfcl()
