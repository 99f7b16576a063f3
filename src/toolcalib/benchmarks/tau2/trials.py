"""Several τ² results files of one domain in a published run's folder: the trials of one run.

τ² writes a run's trials into one file (`num_trials`); running again (more trials, another seed)
writes another file. So a folder may hold several files of a domain, and they are read as the
trials of one run when they agree on what shapes an episode: the agent and the simulated user
(implementation, LLM and its arguments) and the step and error caps (`SAME_RUN`), and every task
id two of them share names the same task (as τ² reads tasks). Otherwise the import stops with one
line naming both files and the field: two different runs are two models (a folder and a config
entry each).

Each file is imported as it is (`published.import_run`: its own tasks, pairing and trials), in
file-name order; a later file's trials are numbered on after the highest trial of the files
before it (file 1 holding trials 0-2, file 2's trials 0-2 become 3-5), so the unit
`<domain>_<task>:trial<k>` stays one simulation. Each record keeps its file, position and
recorded trial (`Published.file`, `index`, `trial`), and a renumbered one says so in
`Published.pairing`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcalib.jsonio import InputError
from toolcalib.records import Case, Published, Trajectory

if TYPE_CHECKING:
    from toolcalib.benchmarks.tau2.run import Run

SAME_RUN: tuple[tuple[str, ...], ...] = (
    ("agent_info", "implementation"), ("agent_info", "llm"), ("agent_info", "llm_args"),
    ("user_info", "implementation"), ("user_info", "llm"), ("user_info", "llm_args"),
    ("max_steps",), ("max_errors",))
"""The fields of τ²'s `info` that files of one run share (seed, date and τ²'s commit may
differ between its files)."""


def _field(info: Mapping[str, Any], keys: Sequence[str]) -> Any:
    value: Any = info
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def check_same_run(runs: Sequence[Run], names: Mapping[Path, str],
                   same_task: Callable[[Any, Any], bool] = lambda a, b: bool(a == b)) -> None:
    """Raise (one line: file, field, the other file) unless `runs`, one domain's files in file
    order, are the trials of one run (see the module docstring); `same_task`: whether two
    tasks under one id are one task (the import: as τ² reads them, whichever optional fields a
    file writes out)."""
    first = runs[0]
    tasks: dict[str, tuple[Any, Path]] = {}
    for run in runs:
        for keys in SAME_RUN:
            mine, theirs = _field(run.info, keys), _field(first.info, keys)
            if mine != theirs:
                raise InputError(
                    f"{run.path}: field 'info.{'.'.join(keys)}': {_shown(mine)}, but "
                    f"{names[first.path]} has {_shown(theirs)}: results files of one domain in "
                    "one folder are read as trials of one run only with the same agent, user "
                    "and caps (put each run in a folder of its own, one model entry each)")
        for task_id, task in run.tasks.items():
            seen, where = tasks.setdefault(task_id, (task, run.path))
            if seen != task and not same_task(seen, task):
                raise InputError(
                    f"{run.path}: field 'tasks' (id {task_id!r}): not the task "
                    f"{names[where]} holds under that id: results files of one domain in one "
                    "folder are read as trials of one run only where a task id names one task")


def trial_of(case_id: str) -> int:
    """The trial of a unit `<domain>_<task>:trial<k>`."""
    return int(case_id.rpartition(":trial")[2])


def renumbered(case_id: str, offset: int) -> str:
    task, _, trial = case_id.rpartition(":trial")
    return f"{task}:trial{int(trial) + offset}"


def continue_trials(cases: list[Case], trajectories: list[Trajectory],
                    records: list[Published], offset: int, which: str
                    ) -> tuple[list[Case], list[Trajectory], list[Published]]:
    """One file's import with its trials numbered on from `offset`; `which`: the file among the
    domain's (e.g. `file 2 of 3`), for each renumbered record's note."""
    if not offset:
        return cases, trajectories, records

    def moved(record: Published) -> Published:
        if record.case_id is None:
            return record
        new = renumbered(record.case_id, offset)
        how = (f"trial {trial_of(new)}: trial {trial_of(record.case_id)} of {which}, "
               "numbered on after the domain's earlier files")
        return record.replace(case_id=new, pairing=f"{record.pairing}; {how}"
                              if record.pairing else how)

    records = [moved(record) for record in records]
    by_index = {record.index: record for record in records}
    trajectories = [t.replace(case_id=renumbered(t.case_id, offset),
                              published=None if t.published is None
                              else by_index[t.published.index]) for t in trajectories]
    return ([case.replace(id=renumbered(case.id, offset)) for case in cases], trajectories,
            records)
