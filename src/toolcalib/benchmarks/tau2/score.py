"""toolcalib's scorer of τ²'s reward for the pinned release's tasks (τ²'s evaluator not used).

The rule, as τ²'s `evaluate_simulation` (evaluation type `all`) applies it:

- reward 0 unless the episode ended by the agent or the user stopping (`agent_stop`,
  `user_stop`); any other end (`max_steps`, `too_many_errors`, ...) is not evaluated;
- otherwise the product over the task's reward basis (default `DB`, `COMMUNICATE`: no task of
  this release names another):
  - DB: τ²'s hash of the database after replaying every tool call of the trajectory (the
    agent's and the user's, each with its requestor) on a fresh environment equals the hash
    after replaying the task's reference actions on another (each with its own requestor; a
    reference action that raises is skipped). A task whose `actions` and `env_assertions`
    are both absent matches without any replay. The replay re-checks each recorded tool
    result: a result that differs from the replay's (compared as JSON when both parse), or a
    tool message that does not follow its call, is an error (`Tau2TrajectoryError`), as it
    is in τ²'s evaluator (which raises `ValueError`). The agent's stop (`###STOP###`) in a
    message with calls ends the episode before they run (τ²'s orchestrator; its own run then
    raises): τ²'s replay fails on them, and here the trajectory gets reward 0, DB not
    evaluated (a task needing no replay is scored as usual);
  - COMMUNICATE: each `communicate_info` string occurs, lower-cased, in the lower-cased text
    of one assistant message with its commas removed (the string's own commas are kept);
  - ACTION (in no task's basis here, reported always): each reference action matches some call
    of the trajectory (a stop message's unexecuted ones included, as τ²'s action check reads
    every call of the messages): the same name and equal values of the action's
    `compare_args`, or, when it has none, of every argument the *call* passes (a call passing
    no argument matches any action of its name).

Trajectories are toolcalib `Message`s after the task's initial state: a `tool` message answers
the calls of the message before it, in order (τ² pairs them by id). Speed: the reference
replay's hash is computed once per task; a trajectory without a write call of the agent leaves
the database as the initial state left it (τ²'s read and generic tools do not write), so its
calls are re-checked on one shared environment and the initial hash is reused. The pipeline's
scorer (`score_trajectory`) trusts the recorded results (its loop got them from τ²'s
environment): a trajectory whose write calls equal the reference actions' writes, in order,
leaves the reference's database (reads do not write; a tool's effect depends only on the
database and its arguments), so it matches without a replay; the gold stage's hashes seed the
reference replay's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolcalib.benchmarks.tau2.environment import (
    Requestor,
    Tau2Environment,
    tau2_module,
    write_tools,
)
from toolcalib.benchmarks.tau2.loop import AGENT_STOP
from toolcalib.benchmarks.tau2.release import Tau2Release, check_domain
from toolcalib.jsonio import InputError
from toolcalib.records import Message, ToolCall

TERMINATIONS = ("agent_stop", "user_stop", "judge_stop", "max_steps", "too_many_errors",
                "agent_error", "user_error")
"""τ²'s `TerminationReason` values."""
SCORED_TERMINATIONS = frozenset({"agent_stop", "user_stop"})
DEFAULT_REWARD_BASIS = ("DB", "COMMUNICATE")
SUPPORTED_BASIS = frozenset({"DB", "COMMUNICATE", "ACTION", "ENV_ASSERTION"})
"""`ENV_ASSERTION` only for a task without env assertions (this release has none);
`NL_ASSERTION` needs a judge, which τ²'s `all` evaluation refuses too."""
STOP_WITH_CALLS = ("the agent stopped (###STOP###) in a message with tool calls: τ² executes "
                   "none of them and its replay of the trajectory fails on a call without its "
                   "result (its own run raises before evaluating)")


class Tau2TrajectoryError(InputError):
    """The trajectory cannot be replayed: a tool message without its call, a call without its
    tool message, or a recorded result the replay does not reproduce."""


@dataclass(frozen=True)
class Tau2Score:
    reward: float
    db_match: bool | None
    """None when not evaluated (premature end, no evaluation criteria)."""
    communicate: bool | None
    actions_matched: list[bool]
    """Per reference action, in the task's order (computed whatever the end)."""
    reason: str | None
    """Why the reward is not 1 (None when it is)."""


@dataclass(frozen=True)
class _Call:
    call: ToolCall
    requestor: Requestor
    content: str
    index: int
    """The tool message's index in the trajectory."""


class Tau2Scorer:
    """Scores one domain's trajectories; caches per task what the trajectory cannot change.
    Not thread-safe."""

    def __init__(self, release: Tau2Release, domain: str, trust_results: bool = False):
        """`trust_results`: the trajectories' tool results are what τ²'s environment answered
        (the pipeline's own loop recorded them): a trajectory whose write calls equal the
        reference actions' writes, in order, matches the database without a replay (so its
        results are not re-checked)."""
        self.trust_results = trust_results
        self.release = release
        self.domain = check_domain(domain)
        self._gold: dict[str, tuple[str, str | None]] = {}

    def score(self, task: dict[str, Any], messages: Sequence[Message], termination: str,
              replayed: tuple[str, str | None] | None = None) -> Tau2Score:
        """`replayed`: the database hashes after every call of the trajectory, when its
        import already replayed them on a fresh environment (a published run's)."""
        if termination not in TERMINATIONS:
            raise InputError(f"unknown τ² termination '{termination}' "
                             f"(known: {', '.join(TERMINATIONS)})")
        unrun = stop_calls(messages, termination)
        calls = paired_calls(messages[:-1] if unrun else messages)
        criteria = task.get("evaluation_criteria")
        actions = (criteria or {}).get("actions") or []
        emitted = [c.call for c in calls] + unrun
        matched = [any(action_matches(action, call) for call in emitted) for action in actions]
        if termination not in SCORED_TERMINATIONS:
            return Tau2Score(0.0, None, None, matched,
                             f"ended by {termination}: τ² evaluates agent_stop and user_stop "
                             "only")
        if criteria is None:
            return Tau2Score(1.0, None, None, matched, None)
        basis = criteria.get("reward_basis")
        basis = list(DEFAULT_REWARD_BASIS if basis is None else basis)
        unsupported = sorted(set(basis) - SUPPORTED_BASIS)
        if unsupported or criteria.get("env_assertions"):
            raise InputError(f"task {task.get('id')}: reward basis {unsupported or basis} with "
                             f"env assertions {criteria.get('env_assertions')} is not scored")
        if unrun and not _no_replay(criteria):
            return Tau2Score(0.0, None, None, matched, STOP_WITH_CALLS)
        db_match = self._db_match(task, criteria, calls) if replayed is None else \
            replayed == self._gold_hashes(task)
        missing = [info for info in criteria.get("communicate_info") or []
                   if not communicated(info, messages)]
        parts = {"DB": db_match, "COMMUNICATE": not missing, "ACTION": all(matched),
                 "ENV_ASSERTION": True}
        reward = 1.0
        for kind in basis:
            reward *= float(parts[kind])
        reasons = []
        if "DB" in basis and not db_match:
            reasons.append("the database differs from the reference actions' replay")
        if "COMMUNICATE" in basis and missing:
            reasons.append(f"not communicated: {', '.join(map(repr, missing))}")
        if "ACTION" in basis and not all(matched):
            reasons.append("reference actions not matched: " + ", ".join(
                action.get("action_id", action["name"])
                for action, hit in zip(actions, matched, strict=True) if not hit))
        return Tau2Score(reward, db_match, not missing, matched,
                         "; ".join(reasons) if reasons else None)

    def gold_db_hash(self, task: dict[str, Any]) -> str:
        """τ²'s database hash after the task's reference actions (cached per task)."""
        return self._gold_hashes(task)[0]

    def _gold_hashes(self, task: dict[str, Any]) -> tuple[str, str | None]:
        key = _key(task.get("initial_state"), task["evaluation_criteria"].get("actions"))
        if key not in self._gold:
            env = Tau2Environment(self.release, self.domain, task)
            model = tau2_module(self.release, "tau2.data_model.tasks").Task.model_validate(task)
            for action in model.evaluation_criteria.actions or []:
                try:
                    env.make_tool_call(action.name, action.requestor, action.arguments)
                except Exception:  # noqa: S110 - τ²'s evaluator skips a failing action too
                    pass
            self._gold[key] = _hashes(env)
        return self._gold[key]

    def _db_match(self, task: dict[str, Any], criteria: dict[str, Any],
                  calls: list[_Call]) -> bool:
        if _no_replay(criteria):
            return True
        if self.trust_results and self._writes(calls) and _write_sequence(calls, self._names) \
                == _write_sequence(_reference_calls(criteria), self._names):
            return True
        env = Tau2Environment(self.release, self.domain, task)
        for c in calls:
            _check_result(c, env.execute(c.call, c.requestor)[0])
        return _hashes(env) == self._gold_hashes(task)

    @property
    def _names(self) -> frozenset[str]:
        return write_tools(self.release, self.domain)

    def _writes(self, calls: list[_Call]) -> bool:
        names = self._names
        return any(c.requestor == "assistant" and c.call.name in names for c in calls)

    def seed_gold(self, task: dict[str, Any], hashes: tuple[str, str | None]) -> None:
        """The reference replay's hashes of `task` as the gold stage computed them."""
        self._gold[_key(task.get("initial_state"), task["evaluation_criteria"].get("actions"))] \
            = hashes


def score_trajectory(release: Tau2Release, domain: str, task: dict[str, Any],
                     messages: Sequence[Message], termination: str,
                     gold: tuple[str, str | None] | None = None,
                     replayed: tuple[str, str | None] | None = None) -> Tau2Score:
    """`Tau2Scorer.score` with one scorer (and its caches) per release and domain; `gold`:
    the reference replay's hashes, if the gold stage has them; `replayed`: the trajectory's
    own, if its import computed them."""
    scorer = _scorer(release, domain, trust_results=True)
    if gold is not None and task.get("evaluation_criteria") is not None:
        scorer.seed_gold(task, gold)
    return scorer.score(task, messages, termination, replayed)


def _write_sequence(calls: Sequence[Any], names: frozenset[str]) -> list[str]:
    """The write calls in order (name, requestor, canonical arguments): two call sequences
    with the same writes leave the same database (τ²'s read and generic tools do not write,
    and a tool's effect depends only on the database and its arguments)."""
    return [_key(c.call.name, c.requestor, c.call.arguments) for c in calls
            if c.call.name in names]


def _reference_calls(criteria: dict[str, Any]) -> list[_Call]:
    return [_Call(ToolCall(name=a["name"], arguments=a.get("arguments") or {}),
                  a.get("requestor") or "assistant", "", index)
            for index, a in enumerate(criteria.get("actions") or [])]


def gold_hash(release: Tau2Release, task: dict[str, Any], domain: str) -> str:
    """`Tau2Scorer.gold_db_hash` with the shared scorer of the release and domain."""
    return _scorer(release, domain).gold_db_hash(task)


def gold_hashes(release: Tau2Release, task: dict[str, Any],
                domain: str) -> tuple[str, str | None]:
    """The agent and user database hashes after the task's reference actions."""
    return _scorer(release, domain)._gold_hashes(task)


_SCORERS: dict[tuple[Tau2Release, str, bool], Tau2Scorer] = {}


def _scorer(release: Tau2Release, domain: str, trust_results: bool = False) -> Tau2Scorer:
    """One scorer per release file, domain and trust (equal releases share it)."""
    key = (release, check_domain(domain), trust_results)
    if key not in _SCORERS:
        _SCORERS[key] = Tau2Scorer(release, domain, trust_results)
    return _SCORERS[key]


def _no_replay(criteria: dict[str, Any]) -> bool:
    """τ²'s DB check matches without replaying the trajectory (no actions, no assertions)."""
    return criteria.get("actions") is None and criteria.get("env_assertions") is None


def stop_calls(messages: Sequence[Message], termination: str) -> list[ToolCall]:
    """The calls of the agent's last message when it stopped (`###STOP###`) in a message with
    calls: τ² executes none of them (no tool message follows)."""
    last = messages[-1] if messages else None
    if termination == "agent_stop" and last is not None and last.role == "assistant" \
            and AGENT_STOP in last.content:
        return list(last.tool_calls)
    return []


def paired_calls(messages: Sequence[Message]) -> list[_Call]:
    """Every call of an assistant or user message with the tool message that answers it."""
    calls: list[_Call] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            raise Tau2TrajectoryError(f"message {index - 1}: a tool message that answers no call")
        if message.role not in ("assistant", "user"):
            continue
        for call in message.tool_calls:
            if index >= len(messages) or messages[index].role != "tool":
                raise Tau2TrajectoryError(f"message {index}: the result of {call.name} expected")
            answer = messages[index]
            if answer.name is not None and answer.name != call.name:
                raise Tau2TrajectoryError(f"message {index}: the result of {answer.name} "
                                          f"answers a call of {call.name}")
            calls.append(_Call(call, message.role, answer.content, index))
            index += 1
    return calls


def action_matches(action: dict[str, Any], call: ToolCall) -> bool:
    """τ²'s `Action.compare_with_tool_call`."""
    if action["name"] != call.name:
        return False
    keys = action.get("compare_args")
    if keys is None:
        keys = call.arguments.keys()
    if len(keys) == 0:
        return True
    arguments = action["arguments"]
    return ({k: v for k, v in call.arguments.items() if k in keys}
            == {k: v for k, v in arguments.items() if k in keys})


def communicated(info: str, messages: Sequence[Message]) -> bool:
    needle = info.lower()
    return any(m.role == "assistant" and m.content.strip()
               and needle in m.content.lower().replace(",", "") for m in messages)


def _check_result(c: _Call, content: str) -> None:
    if _as_json(content) != _as_json(c.content):
        raise Tau2TrajectoryError(f"message {c.index}: the replay of {c.call.name} returned "
                                  f"{content[:200]!r}, the trajectory holds {c.content[:200]!r}")


def _as_json(content: str) -> Any:
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return content


def _hashes(env: Tau2Environment) -> tuple[str, str | None]:
    """Both of τ²'s database hashes (the user's is None in airline and retail)."""
    return env.db_hash(), env.user_db_hash()


def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)
