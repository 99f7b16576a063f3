"""Typed records that flow between pipeline stages (one JSON line each), and the class
vocabularies.

Each record is one `msgspec.Struct`: every stage reads, checks and writes the same classes (the
`evaluate` stage included, which decodes its inputs with msgspec in a fraction of the time the
standard library's `json` takes). Checks are exact, as JSON has it: required fields present,
types and literal values right (`"1"` is no int, `1` no bool), unknown fields are errors.
`jsonio.read_records` reads a file of them and names the file, the line and the field of the
first bad value; `jsonio.dumps` writes them as canonical JSON.

A case's function docs (`Case.tools`, 85% of a case file's bytes) are kept as the JSON text of
the line (`Case.tools_json`) and decoded when asked for: classification and scoring never read
them, and reading a case file is five times faster for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Self

import msgspec

from toolcalib.jsonio import InputError

GoldClass = Literal["tool_call", "ask", "refuse", "confirm"]
RecordedClass = Literal["tool_call", "ask", "refuse", "confirm", "other", "malformed"]
"""The classes a recorded emission can have (a labelled corpus row's label)."""
ActionClass = Literal[RecordedClass, "unknown"]
"""`unknown`: a step whose output the record did not keep (`Emission.text_recorded` False)."""
GOLD_CLASSES: tuple[str, ...] = ("tool_call", "ask", "refuse", "confirm")
RECORDED_CLASSES: tuple[str, ...] = ("tool_call", "malformed", "refuse", "ask", "confirm",
                                     "other")
ACTION_CLASSES: tuple[str, ...] = (*RECORDED_CLASSES, "unknown")
"""Every class, highest turn priority first (a turn takes the first class any emission has)."""
ACTION_RANK: dict[str, int] = {action: rank for rank, action in enumerate(ACTION_CLASSES)}
"""Each class's turn priority, 0 the highest."""

Outcome = Literal["completed", "step_cap", "error", "context_overflow"]
"""How a trajectory ended. `completed` and `step_cap` are model behaviour (step_cap is scored
as a failure, as BFCL does); `error` and `context_overflow` are infrastructure: never scored."""
OUTCOMES: tuple[str, ...] = ("completed", "step_cap", "error", "context_overflow")
MODEL_OUTCOMES: tuple[str, ...] = ("completed", "step_cap")
Parse = Literal["none", "ok", "malformed"]
"""How the harness read an emission's text (`Emission.parse`)."""
TurnEnd = Literal["no_call", "step_cap", "single_step", "error", "context_overflow"]
"""How a turn ended (`TurnTrace.ended`)."""


class Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Strict, immutable base. Fields are keyword-only (each subclass says `kw_only=True`, which
    msgspec does not inherit, and `frozen=True`, which msgspec inherits but a type checker's
    dataclass rules do not); `replace` copies with changes. `omitted_at_default`: fields a
    record's JSON leaves out while they hold their default (`jsonio.dumps`), so that a field
    added for one benchmark leaves every other benchmark's lines as they were."""

    omitted_at_default: ClassVar[tuple[str, ...]] = ()

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed."""
        return msgspec.structs.replace(self, **changes)


class Message(Record, frozen=True, kw_only=True):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = []
    name: str | None = None
    """For `tool` messages: the function whose result this is."""


class ToolCall(Record, frozen=True, kw_only=True):
    """A parsed call: a function name and literal arguments, never code."""

    name: str
    arguments: dict[str, Any] = {}


class SourceRef(Record, frozen=True, kw_only=True):
    """Where a case came from: the artifact, the file inside it and the 1-based line."""

    artifact: str
    artifact_sha256: str
    file: str
    line: int
    line_sha256: str


class Turn(Record, frozen=True, kw_only=True):
    index: int
    messages: list[Message]
    """The messages that open this turn (a miss_func turn carries BFCL's own message)."""
    tools_added: list[dict[str, Any]] = []
    """Function docs that become visible at the start of this turn."""
    gold_action: GoldClass
    gold_calls: list[ToolCall] = []
    gold_calls_source: list[str] = []
    """The ground-truth calls exactly as the benchmark writes them."""


NO_DOCS = msgspec.Raw(b"[]")


def docs_json(docs: list[dict[str, Any]]) -> msgspec.Raw:
    """Function docs as `Case.tools_json` holds them: the canonical JSON `jsonio.dumps` writes
    (the docs' own key order kept)."""
    return msgspec.Raw(json.dumps(docs, ensure_ascii=False, separators=(",", ":"))
                       .encode("utf-8"))


_DOCS = msgspec.json.Decoder(list[dict[str, Any]])


class Case(Record, frozen=True, kw_only=True):
    id: str
    benchmark: str
    category: str
    turns: list[Turn]
    tools_json: msgspec.Raw = msgspec.field(name="tools")
    """Function docs visible from the first turn on (JSON key `tools`), as JSON text: a list of
    objects, checked when `tools` decodes it (see `docs_json`). Every benchmark writes them in
    one canonical form, `{name, description, parameters}` with `parameters` a JSON schema (and
    extra members a backend may drop, e.g. BFCL's `response`): backends convert no benchmark's
    tools."""
    environment: dict[str, Any] = {}
    gold_action: GoldClass
    gold_turn: int
    multi_step: bool = True
    """False for single-turn benchmarks answered in one emission with no execution."""
    open_turns: bool = False
    """True when a simulated user opens turns beyond the scripted ones (τ²-bench): every turn
    after the last of `turns` takes that turn's gold class."""
    gold_rule: str | None = None
    """The name of the rule that set `gold_action`, where the benchmark has several."""
    gold_also: dict[GoldClass, str] = {}
    """Further gold classes of a multi-label case, each with the rule that set it (τ²: `ask`
    beside `tool_call` or `refuse`). Each is a unit of its own in the per-case table, id
    `<case id>#<class>`, read from the same trajectory (`metrics.rows.case_rows`)."""
    source: SourceRef

    omitted_at_default: ClassVar[tuple[str, ...]] = ("open_turns", "gold_rule", "gold_also")

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Function docs visible from the first turn on (a new list on every call)."""
        try:
            return _DOCS.decode(self.tools_json)
        except msgspec.ValidationError as exc:
            if "out of range" not in str(exc):
                raise InputError(f"case {self.id}: field 'tools': {exc}") from None
        except msgspec.DecodeError:
            pass
        docs = json.loads(bytes(self.tools_json))  # numbers beyond 64 bits, NaN: as json has them
        try:
            return msgspec.convert(docs, list[dict[str, Any]])
        except msgspec.ValidationError as exc:
            raise InputError(f"case {self.id}: field 'tools': {exc}") from None


class Emission(Record, frozen=True, kw_only=True):
    """One model step: what the backend returned and what the harness made of it."""

    text: str = ""
    tool_calls: list[ToolCall] = []
    """Calls the harness will execute (structured, or parsed from the text)."""
    structured: bool = False
    """True when the calls came as structured API tool calls, not from text."""
    parse: Parse = "none"
    parse_error: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    text_recorded: bool = True
    """False: a published record kept no text for this step although the model produced
    output; with no structured calls its class is `unknown` (`classify.base.Profile`)."""

    omitted_at_default: ClassVar[tuple[str, ...]] = ("text_recorded",)


ReadAlone = Callable[[Emission], ActionClass | None]
"""An emission's class read by itself, with no context (a classifier profile's, handed in by
the stage: `classify.profiles.read_alone`): how a benchmark that reads an agent's text reads it
(τ²'s reference user, its structural `ask`) without importing a classifier."""
AsksUser = Callable[[Emission], str | None]
"""The rule by which a classifier profile reads an emission by itself as asking the user
(`ask`), None where it reads another class (handed in by the generate stage:
`classify.profiles.asks_user`): the `sri-gate` probe's gate, without importing a classifier."""


class Step(Record, frozen=True, kw_only=True):
    index: int
    emission: Emission
    results: list[str] = []
    """Execution result of each call, in order (BFCL's string form)."""
    dropped: bool = False
    """Withdrawn by a variant's probe before anything ran: kept for audit, never executed,
    not part of the conversation afterwards, and not counted in the turn's class."""


class Intervention(Record, frozen=True, kw_only=True):
    """A variant probe's decision at one step (logged whether or not it fired)."""

    turn: int
    step: int
    probe: str
    fired: bool
    reason: str


class TurnTrace(Record, frozen=True, kw_only=True):
    index: int
    steps: list[Step]
    ended: TurnEnd
    user: str | None = None
    """The simulated user's message that opened this turn (τ²-bench)."""

    omitted_at_default: ClassVar[tuple[str, ...]] = ("user",)


class Published(Record, frozen=True, kw_only=True):
    """Where an imported trajectory came from: one record of a published run's file, what
    the run recorded, and how the import read it (`Benchmark.import_run`)."""

    file: str
    """The file's path as the model's options name it (under `path`)."""
    file_sha256: str
    index: int
    """The record's 0-based position in the file."""
    record: str
    """The record's own id."""
    trial: int | None = None
    claimed_case: str | None = None
    """The task id the record names, if any."""
    pairing: str | None = None
    """How the record was placed (τ²: the evidence that pairs it with its task, and a trial
    numbered where it was not recorded or already taken); None: as it says itself."""
    termination: str = "recorded"
    """How the termination was read (`recorded`, or from the dialogue, or missing)."""
    case_id: str | None = None
    """The case (unit) the record became; None: it has no cell (no task to score it on)."""
    excluded: str | None = None
    """Why the record is not scored (its case, if any, is counted in `n_excluded`)."""
    recorded: dict[str, Any] = {}
    """The record's own verdict (τ²: reward, its basis and parts, db_match, termination)."""
    replayed: dict[str, Any] = {}
    """What re-executing the record's calls gave (τ²: the database hashes after them)."""
    differences: list[str] = []
    """Re-executed tool results that differ from the recorded ones, each named."""
    policy_difference: str | None = None
    """τ²: the first passage where the file's policy differs from the pinned release's (a run
    imported with `policy: edited`); None: the same policy."""


class Trajectory(Record, frozen=True, kw_only=True):
    case_id: str
    benchmark: str
    category: str
    model: str
    model_identity: dict[str, Any] = {}
    """What identifies the model's answers: backend, model, weights hash, parameters; the
    backend's identity less its machine facts (`backends.base.MACHINE_FACTS`), which the run
    manifest records."""
    variant: str
    outcome: Outcome
    error: str | None = None
    turns: list[TurnTrace]
    messages: list[Message]
    """The full conversation as the model saw and produced it (dropped replies excluded)."""
    interventions: list[Intervention] = []
    termination: str | None = None
    """Why an episode with a simulated user ended, in the benchmark's words (τ²: `user_stop`,
    `agent_stop`, `max_steps`, `too_many_errors`, `user_error`, ...)."""
    user_identity: dict[str, Any] | None = None
    """What identifies the simulated user's answers (a backend's identity, or the reference
    user's name and version), as `model_identity` does the model's."""
    published: Published | None = None
    """The published run's record this trajectory was imported from (backend `replay`)."""

    omitted_at_default: ClassVar[tuple[str, ...]] = ("termination", "user_identity",
                                                     "published")


class ActionRow(Record, frozen=True, kw_only=True):
    """One emission (level `emission`) or one turn (level `turn`, step None) of a trajectory:
    a row of an action table (`classify.trajectory.action_rows` builds them as dicts)."""

    case_id: str
    model: str
    variant: str
    benchmark: str
    category: str
    outcome: Outcome
    scored: bool
    """False for infrastructure outcomes: kept, but out of every denominator."""
    level: Literal["emission", "dropped", "turn"]
    """`dropped`: an emission a variant's probe withdrew (kept, not part of the turn's class)."""
    turn: int
    step: int | None
    gold_action: GoldClass
    """The gold class of this turn."""
    is_gold_turn: bool
    action: ActionClass | None
    rule: str
    evidence: str
    probes_fired: int = 0
    """On turn rows: how many times the variant's probe fired in this turn."""


ACTION_COLUMNS: list[str] = list(ActionRow.__struct_fields__)
"""The columns of an action table, in order: the fields of `ActionRow`, the keys of
`classify.trajectory.action_rows`' dicts."""


class Gold(Record, frozen=True, kw_only=True):
    """A case's ground truth as a benchmark's gold stage writes it (one JSON line per case):
    each benchmark's gold record extends it (`benchmarks.<name>.gold`)."""

    case_id: str
    category: str
