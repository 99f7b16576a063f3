"""Benchmark registry: a benchmark is one package, `toolcalib.benchmarks.<name>`, whose plugin
module exposes a `Benchmark` object. Nothing outside a benchmark's package imports it, except
through this registry (lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from toolcalib.jsonio import from_data
from toolcalib.records import Gold, Record
from toolcalib.registry import Registry

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcalib.backends.base import Backend, Policy
    from toolcalib.backends.replay import ReplayOptions
    from toolcalib.config import ReleaseConfig
    from toolcalib.records import Case, Published, ReadAlone, Trajectory
    from toolcalib.steploop import EnvironmentFactory, Loop
    from toolcalib.verdicts import Score
    from toolcalib.writes import Write

PLUGINS: Registry[AnyBenchmark] = Registry("benchmark", {
    "bfcl": "toolcalib.benchmarks.bfcl.plugin:BENCHMARK",
    "tau2": "toolcalib.benchmarks.tau2.plugin:BENCHMARK"})
"""Benchmark name -> its plugin's `BENCHMARK`; adding a benchmark is one package + one entry
here and one in `CONFIGS`."""
CONFIGS: Registry[type[ReleaseConfig]] = Registry("benchmark", {
    "bfcl": "toolcalib.benchmarks.bfcl.config:BfclConfig",
    "tau2": "toolcalib.benchmarks.tau2.config:Tau2Config"})
"""Benchmark name -> the record of its `benchmarks.<name>` config section (`module:class`, a
msgspec struct): the config schema is generated from it."""


class CaseSettings(Record, frozen=True, kw_only=True):
    """The fields of a benchmark's config section that shape its cases (`normalize
    --benchmark-options`, and a published run's import); a benchmark with fields of its own
    subclasses it (τ²: `ask_gold`), one without uses it as it is (BFCL)."""


class LoopSettings(Record, frozen=True, kw_only=True):
    """The fields of a benchmark's config section that its loop reads (`generate
    --benchmark-options`); a benchmark with fields of its own subclasses it (τ²: the simulated
    user and τ²'s limits), one without uses it as it is (BFCL)."""

    def user_model(self) -> str | None:
        """The `models` entry playing a simulated user (`generate --user-spec`), if any."""
        return None


class Scripted(NamedTuple):
    """A loop of scripted turns as a benchmark states it (`Benchmark.loop`): the case's turns in
    order, a variant's probe at its seams; the driver builds it (`generate.conversation`)."""

    max_steps: int = 20
    """Call steps per turn before the case ends as `step_cap` (BFCL's force-quit)."""
    extras: tuple[str, ...] = ()
    """The benchmark's own members of the tool docs (`Request.extras`)."""


class Replay(Protocol):
    """How a benchmark's loop replays a published run (`generate.replay`, which the import
    stage hands `Benchmark.import_run`): `cases` under `baseline`, each step answered by
    `backend` from the record."""

    def __call__(self, cases: list[Case], backend: Backend, environment: EnvironmentFactory,
                 loop: Loop | Scripted) -> Iterable[Trajectory]: ...


SettingsT = TypeVar("SettingsT", bound=Record)


def settings(kind: type[SettingsT], options: Mapping[str, object] | None,
             where: str = "--benchmark-options") -> SettingsT:
    """A benchmark's settings record (`Benchmark.case_settings`, `.loop_settings`) from the
    fields of its config section; a bad field is an `InputError` naming it."""
    return from_data(dict(options or {}), kind, where)


def section_settings(kind: type[Record], section: Mapping[str, object]) -> dict[str, object]:
    """The fields of `kind` a benchmark's config section sets, as it sets them (what the
    workflow passes as `--benchmark-options`)."""
    return {key: section[key] for key in kind.__struct_fields__ if key in section}


GoldT = TypeVar("GoldT", bound=Gold)
CasesT = TypeVar("CasesT", bound=CaseSettings)
LoopT = TypeVar("LoopT", bound=LoopSettings)


class Benchmark(Protocol[GoldT, CasesT, LoopT]):
    """A benchmark plugin, typed by its gold record, its case settings and its loop settings
    (each a record of its own package)."""

    name: str
    version: str
    """The plugin's version, bumped when what it makes of the same release changes (cases,
    gold, loop, scoring): recorded in the run manifest (`provenance.manifest`), never in a
    trajectory or a response-store key."""
    categories: tuple[str, ...]
    single_step: frozenset[str]
    """The categories whose cases are answered in one emission with nothing executed (BFCL's
    irrelevance sets): a reference policy's invariants differ there (`report.selfcheck`)."""
    opens_as: Mapping[str, str]
    """Category -> the category whose cases its cases open as (job order only: `schedule`)."""
    embeds_cases: bool
    """Whether a published run's files carry cases of their own (τ²: the tasks each results
    file embeds), scored with their own gold; else its import returns the release's cases and
    the run is scored on the release's gold (BFCL)."""
    variants: tuple[str, ...]
    """The context variants whose effect this benchmark's loop applies (`variants.VARIANTS`
    names): a run under another is refused (`variants.refusal`), not labelled and run as
    baseline."""
    case_settings: type[CasesT]
    loop_settings: type[LoopT]
    policies: Mapping[str, Policy]
    """Reference policies with a meaning of their own on this benchmark: the generate stage
    hands them to the policy backend (`backends.policy`), which answers the rest."""

    def load_cases(self, source: str, category: str, settings: CasesT) -> list[Case]:
        """The category's cases, shaped by `settings`."""

    def environment(self, source: str, case: Case) -> object:
        """A fresh tool environment for a multi-step case, which only this benchmark's loop
        uses (None when nothing executes)."""

    def gold(self, source: str, case: Case) -> GoldT:
        """The case's ground truth, written as one JSON line per case."""

    def gold_key(self, source: str, case: Case) -> str | None:
        """Cases with one key have one gold, up to the case's own id (None: never reused):
        the `gold` stage takes a known case's row (`gold_as`) instead of executing again."""

    def gold_as(self, row: GoldT, case: Case) -> GoldT:
        """A known case's gold row (same `gold_key`) as `case`'s."""

    def read_gold(self, path: str) -> Mapping[str, GoldT]:
        """A file of `gold`'s lines by case id, as `score` takes them."""

    def score(self, source: str, case: Case, trajectory: Trajectory,
              gold: GoldT | None) -> Score:
        """The case's Acc verdict for the trajectory (`gold` None: the file has no line)."""

    def loop(self, settings: LoopT, user: Backend | None, source: str,
             reads: ReadAlone) -> Loop | Scripted:
        """The conversation factory for `settings` and the backend playing a simulated user
        (None without one), or a loop of scripted turns as its facts (`Scripted`: BFCL);
        `reads`: how a simulated user reads the agent's text (the generate stage passes the
        `default` profile's reading; τ²'s reference user)."""

    def writes(self, case: Case, trajectory: Trajectory) -> list[Write]:
        """The trajectory's calls that need the user's approval, in order, each with its turn
        and what the agent and user said before it (τ²: its write calls, gold `confirm`; none
        on BFCL): the evaluate stage has its profile judge them and makes each a per-case row
        (`metrics.confirm_rows`)."""

    def structural(self, case: Case, trajectory: Trajectory, score: Score,
                   reads: ReadAlone) -> dict[str, bool | None]:
        """The published method's structural reading of each of the case's gold classes
        (`case` with its gold as the trajectory's variant presents it; None: none, e.g.
        unscored), reported beside GAR. A benchmark without the method's reading returns {}
        and its per-case `structural_hit` is null (BFCL). τ²: refuse = no write call,
        tool_call = every reference action matched, ask = some emission `reads` classes `ask`
        (the evaluate stage passes the `paper` profile's reading)."""

    def import_run(self, source: str, options: ReplayOptions, model: str, category: str,
                   cases: list[Case], settings: CasesT, replay: Replay) -> ImportedRun:
        """A published run of this benchmark (a model with backend `replay`, `options` naming
        its files) as the cases and trajectories of one category, variant `baseline`. `cases`:
        the release's cases of the category, selected as for any model (a benchmark whose
        files embed their own cases returns those instead); `settings`: how its cases are
        shaped (e.g. how gold is set); `replay`: runs cases through its loop, each step
        answered from the record (BFCL)."""

    def published_models(self, options: ReplayOptions) -> list[str]:
        """The model folders of a published-results folder holding many models (a `replay`
        entry's `model: '*'`, one model each); an InputError where the format has none."""

    def published_files(self, options: ReplayOptions) -> list[str]:
        """The files a published run's import reads (the workflow's inputs of its jobs)."""


AnyBenchmark = Benchmark[Gold, CaseSettings, LoopSettings]
"""A benchmark as the registry hands it out: the stages pass its records between its own
methods only."""


@dataclass(frozen=True)
class ImportedRun:
    """What `Benchmark.import_run` makes of a published run's files for one category."""

    cases: list[Case]
    """The cases scored, one per trajectory, in the trajectories' order."""
    trajectories: list[Trajectory]
    identity: Mapping[str, object]
    """What identifies the published run (backend, files and their sha256, recorded models)."""
    records: list[Published] = field(default_factory=list)
    """Every record of the files read, in file order (the published-runs table's rows), those
    left without a cell included; empty for a format without per-record provenance."""
    notes: list[str] = field(default_factory=list)
    """One line each, for the log: records left without a cell, divergences."""
    summary: Mapping[str, object] | None = None
    """The benchmark's own headline for the category as the run recorded it (BFCL: its score
    file's summary line: `file`, `accuracy`, `correct_count`, `total_count`, `source`); None
    where the format records none."""


def published_name(path: Path, root: Path) -> str:
    """A published run's file as its records and identity name it (`Published.file`, the keys
    of `ImportedRun.identity`'s `files`, the import's per-file counts): its path relative to
    the run's `path` (`root`), or the whole path where it lies outside (BFCL's `score_path`)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def every_file(path: str | Path) -> list[str]:
    """A file itself, or every file under a folder, sorted."""
    root = Path(path)
    if root.is_dir():
        return sorted(str(p) for p in root.rglob("*") if p.is_file())
    return [str(root)]


def get_benchmark(name: str) -> AnyBenchmark:
    return PLUGINS.load(name)
