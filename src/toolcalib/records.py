"""Typed records that flow between pipeline stages (one JSON line each).

The class vocabularies and the plain views `evaluate` reads (without pydantic) are in `views`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcalib.views import (
    ACTION_CLASSES,
    GOLD_CLASSES,
    MODEL_OUTCOMES,
    ActionClass,
    GoldClass,
    Outcome,
    TurnsByIndex,
)

__all__ = ["ACTION_CLASSES", "GOLD_CLASSES", "MODEL_OUTCOMES", "ActionClass", "GoldClass",
           "Outcome"]


class Record(BaseModel):
    """Strict base: unknown fields are errors, so a malformed line names its field."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Message(Record):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    name: str | None = None
    """For `tool` messages: the function whose result this is."""


class ToolCall(Record):
    """A parsed call: a function name and literal arguments, never code."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class SourceRef(Record):
    """Where a case came from: the artifact, the file inside it and the 1-based line."""

    artifact: str
    artifact_sha256: str
    file: str
    line: int
    line_sha256: str


class Turn(Record):
    index: int
    messages: list[Message]
    """The messages that open this turn (a miss_func turn carries BFCL's own message)."""
    tools_added: list[dict[str, Any]] = Field(default_factory=list)
    """Function docs that become visible at the start of this turn."""
    gold_action: GoldClass
    gold_calls: list[ToolCall] = Field(default_factory=list)
    gold_calls_source: list[str] = Field(default_factory=list)
    """The ground-truth calls exactly as the benchmark writes them."""


class Case(Record):
    id: str
    benchmark: str
    category: str
    turns: list[Turn]
    tools: list[dict[str, Any]]
    """Function docs visible from the first turn on."""
    environment: dict[str, Any] = Field(default_factory=dict)
    gold_action: GoldClass
    gold_turn: int
    multi_step: bool = True
    """False for single-turn benchmarks answered in one emission with no execution."""
    open_turns: bool = Field(default=False, exclude_if=lambda value: not value)
    """True when a simulated user opens turns beyond the scripted ones (τ²-bench): every turn
    after the last of `turns` takes that turn's gold class."""
    gold_rule: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The name of the rule that set `gold_action`, where the benchmark has several."""
    source: SourceRef


class Emission(Record):
    """One model step: what the backend returned and what the harness made of it."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Calls the harness will execute (structured, or parsed from the text)."""
    structured: bool = False
    """True when the calls came as structured API tool calls, not from text."""
    parse: Literal["none", "ok", "malformed"] = "none"
    parse_error: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class Step(Record):
    index: int
    emission: Emission
    results: list[str] = Field(default_factory=list)
    """Execution result of each call, in order (BFCL's string form)."""
    dropped: bool = False
    """Withdrawn by a variant's probe before anything ran: kept for audit, never executed,
    not part of the conversation afterwards, and not counted in the turn's class."""


class Intervention(Record):
    """A variant probe's decision at one step (logged whether or not it fired)."""

    turn: int
    step: int
    probe: str
    fired: bool
    reason: str


class TurnTrace(Record):
    index: int
    steps: list[Step]
    ended: Literal["no_call", "step_cap", "single_step", "error", "context_overflow"]
    user: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The simulated user's message that opened this turn (τ²-bench)."""


class Trajectory(Record):
    case_id: str
    benchmark: str
    category: str
    model: str
    model_identity: dict[str, Any] = Field(default_factory=dict)
    """What identifies the model's answers: backend, model, weights hash, parameters; the
    backend's identity less its machine facts (`backends.base.MACHINE_FACTS`), which the run
    manifest records."""
    variant: str
    outcome: Outcome
    error: str | None = None
    turns: list[TurnTrace]
    messages: list[Message]
    """The full conversation as the model saw and produced it (dropped replies excluded)."""
    interventions: list[Intervention] = Field(default_factory=list)
    termination: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Why an episode with a simulated user ended, in the benchmark's words (τ²: `user_stop`,
    `agent_stop`, `max_steps`, `too_many_errors`, `user_error`, ...)."""
    user_identity: dict[str, Any] | None = Field(default=None,
                                                 exclude_if=lambda value: value is None)
    """What identifies the simulated user's answers (a backend's identity, or the reference
    user's name and version), as `model_identity` does the model's."""


Message.model_rebuild()


class ActionRow(Record):
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


class GoldTurn(Record):
    results: list[str] = Field(default_factory=list)
    """Result string of each ground-truth call of the turn, in order."""
    state: dict[str, dict[str, Any]]
    """`Environment.state()` after the turn's ground-truth calls."""


class GoldTrace(Record, TurnsByIndex):
    """A multi-turn case's ground truth executed once (`score.gold.gold_trace`); the checker
    reads a gold file's lines as `score.gold.GoldLine`s."""

    case_id: str
    category: str
    turns: list[GoldTurn]
