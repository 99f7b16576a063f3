"""Benchmark registry: a benchmark is one package, `toolcalib.benchmarks.<name>`, whose plugin
module exposes a `Benchmark` object. Nothing outside a benchmark's package imports it, except
through this registry (lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from toolcalib.registry import Registry

if TYPE_CHECKING:
    from toolcalib.backends.replay import ReplayOptions
    from toolcalib.classify.base import Profile
    from toolcalib.config import ReleaseConfig
    from toolcalib.records import Case, Published, Trajectory

PLUGINS: Registry[Benchmark] = Registry("benchmark", {
    "bfcl": "toolcalib.benchmarks.bfcl.plugin:BENCHMARK",
    "tau2": "toolcalib.benchmarks.tau2.plugin:BENCHMARK"})
"""Benchmark name -> its plugin's `BENCHMARK`; adding a benchmark is one package + one entry
here and one in `CONFIGS`."""
CONFIGS: Registry[type[ReleaseConfig]] = Registry("benchmark", {
    "bfcl": "toolcalib.benchmarks.bfcl.config:BfclConfig",
    "tau2": "toolcalib.benchmarks.tau2.config:Tau2Config"})
"""Benchmark name -> the model of its `benchmarks.<name>` config section (`module:class`): the
config schema is generated from it."""


class Benchmark(Protocol):
    name: str
    categories: tuple[str, ...]
    opens_as: dict[str, str]
    """Category -> the category whose cases its cases open as (job order only: `schedule`)."""
    variants: tuple[str, ...]
    """The context variants whose effect this benchmark's loop applies (`variants.VARIANTS`
    names): a run under another is refused (`variants.refusal`), not labelled and run as
    baseline."""

    def load_cases(self, source: str, category: str, **options: Any) -> list[Case]:
        """The category's cases; `options`: the fields of the benchmark's config section that
        shape them (`normalize --benchmark-options`; τ²: `ask_gold`; BFCL: none)."""

    def environment(self, source: str, case: Case) -> Any:
        """A fresh tool environment for a multi-step case (None when nothing executes)."""

    def gold(self, source: str, case: Case) -> Any:
        """The case's ground truth, written as one JSON line per case."""

    def read_gold(self, path: str) -> Mapping[str, Any]:
        """A file of `gold`'s lines by case id, as `score` takes them."""

    def score(self, source: str, case: Case,
              trajectory: Trajectory, gold: Any) -> Any: ...

    def loop(self, options: dict[str, Any], user_backend: Any, source: str) -> Any:
        """The conversation factory (`generate.Loop`) for this benchmark's config section
        (`options`) and the backend playing a simulated user (None without one)."""

    def units(self, case: Case, trajectory: Trajectory, score: Any,
              profile: Profile) -> list[dict[str, Any]]:
        """Per-case rows beyond the case's own (τ²: one per write call, gold `confirm`, its
        verdict `profile`'s: `Profile.confirm_verdicts`)."""

    def structural(self, case: Case, trajectory: Trajectory,
                   score: Any) -> dict[str, bool | None]:
        """The published method's structural reading of each of the case's gold classes
        (`case` with its gold as the trajectory's variant presents it; None: none, e.g.
        unscored), reported beside GAR. A benchmark without the method's reading returns {}
        and its per-case `structural_hit` is null (BFCL). τ²: refuse = no write call,
        tool_call = every reference action matched, ask = some `paper`-profile ask."""

    policies: dict[str, Any]
    """Reference policies with a meaning of their own on this benchmark (`backends.policy`)."""

    def import_run(self, source: str, options: ReplayOptions, model: str, category: str,
                   cases: list[Case], settings: Mapping[str, Any]) -> ImportedRun:
        """A published run of this benchmark (a model with backend `replay`, `options` naming
        its files) as the cases and trajectories of one category, variant `baseline`. `cases`:
        the release's cases of the category, selected as for any model (a benchmark whose
        files embed their own cases returns those instead); `settings`: the benchmark config
        section's own fields (e.g. how gold is set)."""


@dataclass(frozen=True)
class ImportedRun:
    """What `Benchmark.import_run` makes of a published run's files for one category."""

    cases: list[Case]
    """The cases scored, one per trajectory, in the trajectories' order."""
    trajectories: list[Trajectory]
    identity: dict[str, Any]
    """What identifies the published run (backend, files and their sha256, recorded models)."""
    records: list[Published] = field(default_factory=list)
    """Every record of the files read, in file order (the published-runs table's rows), those
    left without a cell included; empty for a format without per-record provenance."""
    notes: list[str] = field(default_factory=list)
    """One line each, for the log: records left without a cell, divergences."""


def get_benchmark(name: str) -> Benchmark:
    return PLUGINS.load(name)
