"""Published τ²-bench runs (τ²'s results format, as `tau2 run` writes it) as cases and
trajectories: the import, which assembles what the modules beside it read, check and verify.

A results file is a JSON object with `info` (agent and user LLMs, `environment_info` with the
domain and its policy), `tasks` (the task set the run used) and `simulations` (one per task and
trial: `messages`, `termination_reason`, `reward_info` with the recorded reward and its parts).

- **Shape.** Anything else (a bare list of simulations, a summary with `domain`/`pass_rate`, a
  truncated file) stops with one line naming the file and the keys expected (`InputError`;
  `results`).
- **Release check.** The file's domain must be one we run and its policy the pinned release's
  (else one line naming the file and what differs). The database is not in the format: it is
  checked through the tool results, every call re-executed (below; `release_check`).
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
  differs from the recorded one is listed (`Published.differences`); the import goes on
  (`turns`, `verify`, which also sets the recorded reward beside the recomputed one).
- **Termination.** τ²'s reason maps onto ours (`user_stop`/`agent_stop`: completed;
  `max_steps`/`too_many_errors`: step_cap; any other: error). A missing reason is named: it is
  read from the dialogue only where a final `###STOP###` shows it, and the reading is recorded
  (`turns`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from toolcalib.benchmarks import ImportedRun, published_name
from toolcalib.benchmarks.tau2.environment import Tau2Environment, task_as_read
from toolcalib.benchmarks.tau2.gold import DEFAULT_ASK_GOLD
from toolcalib.benchmarks.tau2.normalize import normalize_tasks
from toolcalib.benchmarks.tau2.pairing import Pairing, assign
from toolcalib.benchmarks.tau2.release import Tau2Release
from toolcalib.benchmarks.tau2.release_check import PolicyCheck, check_release
from toolcalib.benchmarks.tau2.results import read_run, run_files
from toolcalib.benchmarks.tau2.run import Run
from toolcalib.benchmarks.tau2.trials import check_same_run, continue_trials, trial_of
from toolcalib.benchmarks.tau2.turns import simulation_turns, termination_of
from toolcalib.benchmarks.tau2.verify import recorded_verdict
from toolcalib.jsonio import InputError
from toolcalib.records import Case, Outcome, Published, Trajectory, TurnTrace

EXCLUDED = "tau2:published:excluded"
"""The `error` of a simulation left out of scoring (its reason follows)."""
OUTCOME_OF: dict[str, Outcome] = {"user_stop": "completed", "agent_stop": "completed",
                                  "max_steps": "step_cap", "too_many_errors": "step_cap"}


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
    names = {run.path: published_name(run.path, root) for run in runs}
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
