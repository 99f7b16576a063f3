"""Published τ²-bench runs (τ²'s results format, as `tau2 run` writes it) as cases and
trajectories.

A results file is a JSON object with `info` (agent and user LLMs, `environment_info` with the
domain and its policy), `tasks` (the task set the run used) and `simulations` (one per task and
trial: `messages`, `termination_reason`, `reward_info` with the recorded reward and its parts).

- **Shape.** Anything else (a bare list of simulations, a summary with `domain`/`pass_rate`, a
  truncated file) stops with one line naming the file and the keys expected (`InputError`).
- **Release check.** The file's domain must be one we run and its policy the pinned release's
  (else one line naming the file and what differs). The database is not in the format: it is
  checked through the tool results, every call re-executed (below).
- **Tasks.** Gold and Acc use the tasks embedded in the file (normalized as the release's,
  `normalize_tasks`); each case records whether its task equals the pinned release's.
- **Unit.** A simulation is the case `<domain>_<task id>:trial<k>`: trials stay apart and each
  weighs 1 in its cell (the method pools simulations).
- **Which task.** Paired by the content of its recorded checks (`pairing`); the evidence is
  kept on the trajectory (`Published.pairing`). A simulation left without a task is excluded
  with the reason (outcome `error`, counted in `n_excluded`, at its label's task; without a
  valid label it has no cell and is listed only).
- **Re-execution.** Every recorded tool call runs again in τ²'s environment for the task; the
  trajectory holds the re-executed result (what the scorer replays), and each result that
  differs from the recorded one is listed (`Published.differences`); the import goes on.
- **Termination.** τ²'s reason maps onto ours (`user_stop`/`agent_stop`: completed;
  `max_steps`/`too_many_errors`: step_cap; any other: error). A missing reason is named: it is
  read from the dialogue only where a final `###STOP###` shows it, and the reading is recorded.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from toolcalib.benchmarks import ImportedRun
from toolcalib.benchmarks.tau2.environment import Tau2Environment, task_as_read
from toolcalib.benchmarks.tau2.gold import DEFAULT_ASK_GOLD
from toolcalib.benchmarks.tau2.loop import AGENT_STOP, GREETING
from toolcalib.benchmarks.tau2.normalize import normalize_tasks
from toolcalib.benchmarks.tau2.pairing import Pairing, assign
from toolcalib.benchmarks.tau2.release import DOMAINS, Tau2Release
from toolcalib.benchmarks.tau2.run import Run
from toolcalib.benchmarks.tau2.score import TERMINATIONS
from toolcalib.benchmarks.tau2.trials import check_same_run, continue_trials, trial_of
from toolcalib.benchmarks.tau2.user import is_stop
from toolcalib.jsonio import InputError, sha256_file
from toolcalib.records import (
    Case,
    Emission,
    Message,
    Outcome,
    Published,
    Step,
    ToolCall,
    Trajectory,
    TurnTrace,
)

SHAPE = "an object with keys 'info', 'tasks' and 'simulations' (τ²'s results format)"
EXCLUDED = "tau2:published:excluded"
"""The `error` of a simulation left out of scoring (its reason follows)."""
OUTCOME_OF: dict[str, Outcome] = {"user_stop": "completed", "agent_stop": "completed",
                                  "max_steps": "step_cap", "too_many_errors": "step_cap"}


def read_run(path: str | Path) -> Run:
    """A results file, its shape checked (one `InputError` line naming the file otherwise)."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not a complete JSON document ({exc.msg} at line {exc.lineno}"
                         f" column {exc.colno}); expected {SHAPE}") from None
    if isinstance(data, list):
        raise InputError(f"{path}: a JSON list of {len(data)} items, expected {SHAPE}")
    if not isinstance(data, dict):
        raise InputError(f"{path}: a JSON {type(data).__name__}, expected {SHAPE}")
    missing = [key for key in ("info", "tasks", "simulations") if key not in data]
    if missing:
        raise InputError(f"{path}: keys {', '.join(sorted(map(str, data)))} (no "
                         f"{', '.join(missing)}), expected {SHAPE}")
    info, tasks, simulations = data["info"], data["tasks"], data["simulations"]
    if not isinstance(info, dict) or not isinstance(tasks, list) \
            or not isinstance(simulations, list):
        raise InputError(f"{path}: 'info' must be an object, 'tasks' and 'simulations' lists;"
                         f" expected {SHAPE}")
    domain = (info.get("environment_info") or {}).get("domain_name")
    if domain not in DOMAINS:
        raise InputError(f"{path}: field 'info.environment_info.domain_name': {domain!r}, "
                         f"expected one of {', '.join(DOMAINS)}")
    by_id: dict[str, dict[str, Any]] = {}
    for number, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            raise InputError(f"{path}: field 'tasks[{number}].id': missing or not a string")
        by_id[task["id"]] = task
    for number, sim in enumerate(simulations):
        if not isinstance(sim, dict) or not isinstance(sim.get("messages"), list):
            raise InputError(f"{path}: field 'simulations[{number}].messages': missing or not"
                             " a list")
    return Run(path, sha256_file(path), domain, info, by_id, simulations)


PolicyCheck = Literal["pinned", "edited"]


def check_release(run: Run, release: Tau2Release, policy: PolicyCheck = "pinned"
                  ) -> tuple[dict[str, bool], str | None]:
    """Task id -> whether the embedded task is the pinned release's as τ² reads tasks
    (`task_as_read`), and the first passage where the file's policy differs from the pinned
    one (None: the same); a differing policy raises unless `policy` is `edited`."""
    text = (run.info.get("environment_info") or {}).get("policy")
    difference = policy_difference(str(text or ""), release.policy(run.domain))
    if difference is not None and policy == "pinned":
        raise InputError(f"{run.path}: field 'info.environment_info.policy': not the pinned "
                         f"release's {run.domain} policy ({release.wheel.name}): {difference}"
                         "; to import it anyway set the model's option `policy: edited`")
    tasks = {task["id"]: task_as_read(release, task) for task in release.tasks(run.domain)}
    return {task_id: tasks.get(task_id) == task_as_read(release, task)
            for task_id, task in run.tasks.items()}, difference


def policy_difference(policy: str, pinned: str, width: int = 120) -> str | None:
    """Where `policy` first differs from `pinned`: the line of each holding the first
    differing character (cut to `width` characters around it; a difference at a line's end
    shows the next line too); None when equal."""
    if policy == pinned:
        return None
    at = next((i for i, (a, b) in enumerate(zip(policy, pinned, strict=False)) if a != b),
              min(len(policy), len(pinned)))
    line = policy.count("\n", 0, at) + 1

    def passage(text: str) -> str:
        if at >= len(text):
            return "nothing more"
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at + 1)
        whole = text[start:len(text) if end < 0 else end]
        cut = max(0, min(at - start - width // 2, len(whole) - width))
        return repr(("…" if cut else "") + whole[cut:cut + width]
                    + ("…" if cut + width < len(whole) else ""))

    return (f"first difference at character {at} (line {line}): the file has "
            f"{passage(policy)}, the release {passage(pinned)}")


def termination_of(sim: dict[str, Any], turns: list[TurnTrace]) -> tuple[str | None, str]:
    """Our termination (None: none known) and how it was read."""
    recorded = sim.get("termination_reason")
    if recorded is not None:
        if recorded not in TERMINATIONS:
            return str(recorded), f"recorded {recorded!r} (not a τ² termination reason)"
        return str(recorded), "recorded"
    last = next((m for m in reversed(sim["messages"]) if isinstance(m, dict)
                 and m.get("role") in ("user", "assistant")), None)
    if last is not None and last.get("role") == "user" and is_stop(last.get("content") or ""):
        return "user_stop", "termination_reason missing; the user's last message stops"
    if last is not None and AGENT_STOP in (last.get("content") or ""):
        return "agent_stop", "termination_reason missing; the agent's last message stops"
    return None, "termination_reason missing; the dialogue shows no stop"


def _calls(message: dict[str, Any], where: str) -> list[tuple[str | None, ToolCall]]:
    calls = []
    for number, call in enumerate(message.get("tool_calls") or []):
        arguments = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                arguments = None
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                or not isinstance(arguments, dict):
            raise InputError(f"{where}: field 'tool_calls[{number}]': a call needs a string "
                             "'name' and object 'arguments'")
        calls.append((call.get("id"), ToolCall(name=call["name"], arguments=arguments)))
    return calls


def _usage(message: dict[str, Any], key: str) -> int | None:
    value = (message.get("usage") or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def simulation_turns(sim: dict[str, Any], where: str, environment: Tau2Environment | None
                     ) -> tuple[list[TurnTrace], list[Message], list[str]]:
    """The agent's steps per user turn, the conversation, and the re-executed results that
    differ from the recorded ones (`environment` None: the recorded results are kept)."""
    messages: list[Message] = []
    turns: list[TurnTrace] = []
    differences: list[str] = []
    steps: list[Step] = []
    user: str | None = None
    raw = sim["messages"]
    recorded_results = {m.get("id"): str(m.get("content") or "") for m in raw
                        if isinstance(m, dict) and m.get("role") == "tool"}
    order = [m for m in raw if isinstance(m, dict) and m.get("role") == "tool"]
    next_tool = 0

    def close(ended: Any = "no_call") -> None:
        nonlocal steps
        if steps or user is not None:
            turns.append(TurnTrace(index=len(turns), steps=steps, ended=ended, user=user))
        steps = []

    for number, message in enumerate(raw):
        at = f"{where}: message {number}"
        if not isinstance(message, dict):
            raise InputError(f"{at}: not an object")
        role, content = message.get("role"), message.get("content") or ""
        if role == "user":
            if message.get("tool_calls"):
                raise InputError(f"{at}: field 'tool_calls': the simulated user calls tools "
                                 "(no user tools in airline or retail)")
            close()
            user = str(content)
            messages.append(Message(role="user", content=user))
        elif role == "assistant":
            calls = _calls(message, at)
            if not turns and not steps and user is None and not calls and content == GREETING:
                messages.append(Message(role="assistant", content=GREETING))
                continue
            tool_calls = [call for _, call in calls]
            emission = Emission(text=str(content), tool_calls=tool_calls,
                                structured=bool(tool_calls),
                                parse="ok" if tool_calls else "none",
                                finish_reason="tool_calls" if tool_calls else None,
                                input_tokens=_usage(message, "prompt_tokens"),
                                output_tokens=_usage(message, "completion_tokens"))
            messages.append(Message(role="assistant", content=emission.text,
                                    tool_calls=tool_calls))
            results = []
            stop = AGENT_STOP in emission.text
            for call_id, call in [] if stop else calls:
                if call_id is not None and call_id in recorded_results:
                    recorded = recorded_results[call_id]
                else:
                    recorded = str(order[next_tool].get("content") or "") \
                        if next_tool < len(order) else ""
                next_tool += 1
                result = recorded
                if environment is not None:
                    result, _ = environment.execute(call)
                    if not same_result(result, recorded):
                        differences.append(f"message {number} ({call.name}): "
                                           f"{difference(recorded, result)}")
                results.append(result)
                messages.append(Message(role="tool", name=call.name, content=result))
            steps.append(Step(index=len(steps), emission=emission, results=results))
            if not tool_calls or stop:
                close()
                user = None
        elif role != "tool":
            raise InputError(f"{at}: field 'role': {role!r}, expected user, assistant or tool")
    close()
    return turns, messages, differences


def same_result(a: str, b: str) -> bool:
    """Equal as text, or as JSON where both parse (as τ²'s evaluator compares them)."""
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except (json.JSONDecodeError, TypeError):
        return False


URL = re.compile(r"https?://\S+")


def difference(recorded: str, replayed: str) -> str:
    """A named difference between a recorded and a re-executed result."""
    if URL.sub("<url>", recorded) == URL.sub("<url>", replayed):
        return "differs only in a URL (" + ", ".join(
            sorted(set(URL.findall(recorded)) ^ set(URL.findall(replayed)))) + ")"
    return f"recorded {recorded[:80]!r}, replayed {replayed[:80]!r}"


def recorded_verdict(sim: dict[str, Any]) -> dict[str, Any]:
    """The parts of τ²'s recorded reward the scorer's verdict is compared with."""
    info = sim.get("reward_info") or {}
    reward = info.get("reward")
    return {"reward": float(reward) if isinstance(reward, int | float) else None,
            "reward_basis": info.get("reward_basis"),
            "reward_breakdown": info.get("reward_breakdown"),
            "db_match": (info.get("db_check") or {}).get("db_match"),
            "termination": sim.get("termination_reason")}


def import_run(run: Run, release: Tau2Release, model: str, identity: dict[str, Any],
               pairing: Pairing, file_name: str, ask_gold: str = DEFAULT_ASK_GOLD,
               policy: PolicyCheck = "pinned"
               ) -> tuple[list[Case], list[Trajectory], list[Published]]:
    """The file's scored and excluded simulations as cases and trajectories (by case id),
    and every simulation's record (in file order), those left without a cell included."""
    pinned, policy_edit = check_release(run, release, policy)
    env = Tau2Environment(release, run.domain)
    task_cases = {case.environment["task"]["id"]: case for case in normalize_tasks(
        run.domain, list(run.tasks.values()), env.tools(), env.write_tools(),
        file=f"{file_name}: tasks", artifact=file_name, artifact_sha256=run.sha256,
        ask_gold=ask_gold)}
    user_identity = {"kind": "published", "llm": run.user}
    cases: list[Case] = []
    trajectories: list[Trajectory] = []
    records: list[Published] = []
    for index, (sim, assigned) in enumerate(zip(run.simulations, assign(run, pairing),
                                                strict=True)):
        where = f"{run.path}: simulations[{index}]"
        record = Published(file=file_name, file_sha256=run.sha256, index=index,
                           record=str(sim.get("id")), trial=sim.get("trial"),
                           claimed_case=None if sim.get("task_id") is None
                           else str(sim.get("task_id")), pairing=assigned.pairing,
                           recorded=recorded_verdict(sim), excluded=assigned.excluded,
                           policy_difference=policy_edit)
        if assigned.task_id is None:
            records.append(record)
            continue
        base = task_cases[assigned.task_id]
        case = base.replace(id=f"{base.id}:trial{assigned.trial}",
                            environment={**base.environment,
                                         "pinned_task": pinned[assigned.task_id]})
        replayed: dict[str, Any] = {}
        if assigned.excluded is not None:
            turns, messages, differences = simulation_turns(sim, where, None)
            termination, read = termination_of(sim, turns)
            outcome: Outcome = "error"
            error: str | None = f"{EXCLUDED}: {assigned.excluded}"
            turns = [TurnTrace(index=0, steps=[], ended="error")]
        else:
            environment = Tau2Environment(release, run.domain, case.environment["task"])
            turns, messages, differences = simulation_turns(sim, where, environment)
            replayed = {"db_hash": environment.db_hash(),
                        "user_db_hash": environment.user_db_hash()}
            termination, read = termination_of(sim, turns)
            outcome = OUTCOME_OF.get(termination or "", "error")
            error = None if outcome != "error" else \
                f"τ² termination {termination!r}" if termination else read
        published = record.replace(case_id=case.id, termination=read, replayed=replayed,
                                   differences=differences)
        records.append(published)
        cases.append(case)
        trajectories.append(Trajectory(
            case_id=case.id, benchmark="tau2", category=run.domain, model=model,
            model_identity=identity, variant="baseline", outcome=outcome, error=error,
            turns=turns, messages=messages, termination=termination,
            user_identity=user_identity, published=published))
    if len({c.id for c in cases}) != len(cases):
        dup = next(i for i, n in Counter(c.id for c in cases).items() if n > 1)
        raise InputError(f"{run.path}: two simulations are case {dup} (same task and trial)")
    order = sorted(range(len(cases)), key=lambda i: _case_key(cases[i].id))
    return [cases[i] for i in order], [trajectories[i] for i in order], records


def _case_key(case_id: str) -> tuple[Any, ...]:
    """Numeric task ids in numeric order, then the trial."""
    task, _, trial = case_id.rpartition(":trial")
    number = task.rpartition("_")[2]
    return (int(number) if number.isdigit() else float("inf"), task, int(trial))


def run_files(path: str | Path) -> list[Path]:
    """The results files `path` names: itself, or the `*.json` files of a folder (sorted by
    name: the order several files of one domain are read in as trials of one run)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or folder (a published run's `path`)")
    files = sorted(p for p in path.glob("*.json") if p.is_file())
    if not files:
        raise InputError(f"{path}: no *.json results file in the folder")
    return files


def import_category(path: str | Path, release: Tau2Release, model: str, category: str,
                    pairing: Pairing, ask_gold: str = DEFAULT_ASK_GOLD,
                    policy: PolicyCheck = "pinned") -> ImportedRun:
    """The published run under `path` as one domain's cases and trajectories: the domain's
    results files, several read as the trials of one run in file-name order (`trials`; files
    of another run stop the import, one line naming both); its identity names every file of
    the run with its sha256."""
    files = run_files(path)
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    runs = [read_run(file) for file in files]
    names = {run.path: run.path.relative_to(root).as_posix() for run in runs}
    identity = {"backend": "replay", "benchmark": "tau2", "pairing": pairing, "policy": policy,
                "files": {names[run.path]: run.sha256 for run in runs},
                "agent": sorted({run.agent for run in runs}),
                "user": sorted({run.user for run in runs})}
    mine = [run for run in runs if run.domain == category]
    if not mine:
        return ImportedRun([], [], identity, notes=[f"{path}: no results file for domain "
                                                    f"{category}"])
    check_same_run(mine, names, lambda a, b: task_as_read(release, a) == task_as_read(
        release, b))
    cases: list[Case] = []
    trajectories: list[Trajectory] = []
    records: list[Published] = []
    for number, run in enumerate(mine, start=1):
        more = continue_trials(
            *import_run(run, release, model, identity, pairing, names[run.path], ask_gold,
                        policy),
            offset=1 + max(map(trial_of, (case.id for case in cases)), default=-1),
            which=f"{names[run.path]} (file {number} of {len(mine)})")
        cases, trajectories, records = cases + more[0], trajectories + more[1], \
            records + more[2]
    order = sorted(range(len(cases)), key=lambda i: _case_key(cases[i].id))
    cases, trajectories = [cases[i] for i in order], [trajectories[i] for i in order]
    notes = [f"{path}: {len(mine)} results files of domain {category}, read as the trials of "
             f"one run: {', '.join(names[run.path] for run in mine)}"] if len(mine) > 1 else []
    notes += [f"{r.file}: simulation {r.index} ({r.record}): no cell, {r.excluded}"
              for r in records if r.case_id is None]
    notes += [f"{r.case_id}: result differs: {d}" for r in records for d in r.differences]
    edited = {r.file: r.policy_difference for r in records if r.policy_difference is not None}
    notes += [f"{file}: policy edited, {difference}" for file, difference in edited.items()]
    return ImportedRun(cases, trajectories, identity, records, notes)


def recorded_agreement(published: Published, verdict: Any, case: Case,
                       trajectory: Trajectory) -> dict[str, Any]:
    """The recorded reward beside the recomputed one, and, where they differ, the named
    cause (a score's `details`: `recorded_reward`, `reward_disagreement`)."""
    reward = published.recorded.get("reward")
    return {"recorded_reward": reward,
            "reward_disagreement": None if reward == verdict.reward
            else disagreement(published, verdict, case, trajectory)}


def disagreement(published: Published, verdict: Any, case: Case,
                 trajectory: Trajectory) -> str:
    """Why the recorded reward differs from the scorer's: the first part that differs, with
    the evidence at hand (re-executed results that differ, the writes made and due, how the
    termination was read)."""
    recorded = published.recorded
    task = case.environment["task"]
    if recorded.get("reward") is None:
        return "no reward recorded"
    basis = recorded.get("reward_basis") or []
    if missing := sorted(set(basis) - {"DB", "COMMUNICATE", "ACTION", "ENV_ASSERTION"}):
        return f"reward part not computed: {', '.join(missing)}"
    task_basis = (task.get("evaluation_criteria") or {}).get("reward_basis")
    if task_basis is not None and sorted(basis) != sorted(task_basis):
        return f"recorded reward basis {basis}, the task's {task_basis}"
    read = "" if published.termination == "recorded" else f" ({published.termination})"
    if verdict.db_match is None:
        return f"not evaluated here: {verdict.reason}{read}"
    parts = recorded.get("reward_breakdown") or {}
    for part, value in (("DB", verdict.db_match), ("COMMUNICATE", verdict.communicate)):
        if part in parts and value is not None and bool(parts[part]) != value:
            why = f"{part}: recorded {parts[part]:g}, recomputed {float(value):g}"
            if part == "DB":
                why += _db_evidence(published, case, trajectory)
            return why + read
    return f"unexplained: recorded {recorded.get('reward')}, recomputed {verdict.reward}{read}"


def _db_evidence(published: Published, case: Case, trajectory: Trajectory) -> str:
    """What the trajectory shows about a database verdict the record contradicts."""
    if published.differences:
        return (f"; {len(published.differences)} tool result(s) replay differently, first: "
                f"{published.differences[0]}")
    writes = set(case.environment.get("write_tools") or ())
    made = [c.name for turn in trajectory.turns for step in turn.steps
            for c in step.emission.tool_calls if c.name in writes]
    actions = (case.environment["task"].get("evaluation_criteria") or {}).get("actions") or []
    due = [a["name"] for a in actions if a["name"] in writes]
    return (f"; writes made: {', '.join(made) or 'none'}; the task's reference writes: "
            f"{', '.join(due) or 'none'}")
