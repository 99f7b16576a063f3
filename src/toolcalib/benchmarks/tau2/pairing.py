"""Which task of a published τ² results file each simulation is scored against.

A simulation's recorded `task_id` is not trusted on its own: published files carry labels that
point at other tasks, or none. τ² records what it checked: `reward_info.action_checks` (each a
reference action: name, arguments, action id) and `communicate_checks` (each an info string).

- **Content.** The candidates are the file's tasks whose reference actions (name and arguments,
  as a multiset) and communicate info equal the recorded checks. A record without action checks
  matches only tasks without reference actions (τ² records none for them). A record τ² did not
  evaluate (no database check: it ended at a step or error cap) is no evidence: every task is a
  candidate.
- **Ties**, in order, each applied only where it keeps a candidate: the recorded action ids
  equal the candidate's own (never their numeric prefix: in the pinned retail set tasks 95-113
  carry ids one higher than the task); the most identifiers of the candidate (user, order,
  reservation ids) in the dialogue; the recorded label; a task already taken by as many
  simulations as the file has trials is dropped.
- **Modes.** `content` pairs as above; `label` scores a simulation at its label only where the
  content allows it, and excludes it otherwise. A simulation left without a unique task is
  excluded with the reason. Every assignment keeps its evidence (`Assignment.pairing`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from toolcalib.benchmarks.tau2.run import Run

Pairing = Literal["content", "label"]


@dataclass(frozen=True)
class Assignment:
    """Which task a simulation is scored against (None: no cell), why, and its trial."""

    task_id: str | None
    trial: int
    excluded: str | None = None
    pairing: str | None = None


@dataclass(frozen=True)
class Checks:
    """What τ² recorded checking for one simulation."""

    evaluated: bool
    """A database check is recorded (τ² evaluated the simulation)."""
    actions: tuple[tuple[str, str], ...]
    """Checked reference actions as (name, canonical JSON arguments), sorted."""
    action_ids: frozenset[str]
    communicate: tuple[str, ...]
    """Checked communicate info, sorted."""


def recorded_checks(sim: dict[str, Any]) -> Checks:
    info = sim.get("reward_info") or {}
    actions = [check.get("action") or {} for check in info.get("action_checks") or []
               if isinstance(check, dict)]
    return Checks(evaluated=bool(info.get("db_check")),
                  actions=_action_keys(actions),
                  action_ids=frozenset(str(a.get("action_id")) for a in actions),
                  communicate=tuple(sorted(str(c.get("info")) for c in
                                           info.get("communicate_checks") or []
                                           if isinstance(c, dict))))


def _action_keys(actions: list[Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(a.get("name")), json.dumps(a.get("arguments"), sort_keys=True))
                        for a in actions if isinstance(a, dict)))


def _criteria(task: dict[str, Any]) -> dict[str, Any]:
    return task.get("evaluation_criteria") or {}


def _matches(task: dict[str, Any], checks: Checks) -> bool:
    criteria = _criteria(task)
    return (_action_keys(list(criteria.get("actions") or [])) == checks.actions
            and tuple(sorted(map(str, criteria.get("communicate_info") or [])))
            == checks.communicate)


ID_TOKEN = re.compile(r"#?\b[A-Za-z0-9_.@-]*\d[A-Za-z0-9_.@-]*\b")
"""Identifier-like tokens of a task (user, order, reservation ids, e-mails)."""


def identifiers(task: dict[str, Any]) -> set[str]:
    """Identifier-like strings of a task: its scenario's and its reference actions' values."""
    text = json.dumps([task.get("user_scenario"), _criteria(task).get("actions")],
                      ensure_ascii=False)
    return {token.lstrip("#") for token in ID_TOKEN.findall(text) if len(token) >= 5
            and any(c.isalpha() for c in token)}


def _dialogue(sim: dict[str, Any]) -> str:
    return " ".join(str(m.get("content") or "") + json.dumps(m.get("tool_calls") or [])
                    for m in sim["messages"] if isinstance(m, dict))


@dataclass
class _Found:
    """One simulation's candidates while ties are broken, and the evidence so far."""

    claimed: str | None
    candidates: list[str]
    evidence: list[str]


def _narrow(found: _Found, keep: Callable[[str], bool], because: str) -> None:
    kept = [task_id for task_id in found.candidates if keep(task_id)]
    if kept and len(kept) < len(found.candidates):
        found.candidates = kept
        found.evidence.append(because)


def _names(task_ids: list[str]) -> str:
    return f"task {task_ids[0]!r}" if len(task_ids) == 1 else \
        "tasks " + ", ".join(repr(t) for t in task_ids)


def content_candidates(run: Run, sim: dict[str, Any]) -> _Found:
    """The tasks a simulation's recorded checks allow (module docstring: content)."""
    claimed = None if sim.get("task_id") is None else str(sim.get("task_id"))
    checks = recorded_checks(sim)
    if not checks.evaluated:
        return _Found(claimed, list(run.tasks), ["no checks recorded (τ² did not evaluate "
                                                 "it): every task a candidate"])
    matching = [t for t, task in run.tasks.items() if _matches(task, checks)]
    what = (f"{len(checks.actions)} action check(s)" if checks.actions
            else "no action checks") + f" and {len(checks.communicate)} communicate check(s)"
    if not matching:
        return _Found(claimed, [], [f"{what} match no task of the file"])
    return _Found(claimed, matching, [f"{what} match {_names(matching)}"])


def _by_action_ids(run: Run, sim: dict[str, Any], found: _Found) -> None:
    ids = recorded_checks(sim).action_ids
    if ids:
        _narrow(found, lambda t: frozenset(str(a.get("action_id")) for a in
                                           _criteria(run.tasks[t]).get("actions") or [])
                == ids, "action ids name it")


def _by_identifiers(run: Run, sim: dict[str, Any], found: _Found) -> None:
    dialogue = _dialogue(sim)
    seen = {t: sorted(i for i in identifiers(run.tasks[t]) if i in dialogue)
            for t in found.candidates}
    most = max(len(s) for s in seen.values())
    if most:
        best = [t for t in found.candidates if len(seen[t]) == most]
        _narrow(found, lambda t: t in best,
                f"identifiers in the dialogue: {', '.join(seen[best[0]][:4])}")


def _by_label(run: Run, sim: dict[str, Any], found: _Found) -> None:
    _narrow(found, lambda t: t == found.claimed, "the recorded label")


TIES = (_by_action_ids, _by_identifiers, _by_label)
"""Tie-breakers in order (module docstring)."""


def assign(run: Run, pairing: Pairing) -> list[Assignment]:
    """The task and trial of every simulation, in file order (module docstring)."""
    found = [content_candidates(run, sim) for sim in run.simulations]
    trials = run.info.get("num_trials")
    for tie in TIES if pairing == "content" else ():
        for sim, item in zip(run.simulations, found, strict=True):
            if len(item.candidates) > 1:
                tie(run, sim, item)
        if isinstance(trials, int):
            _by_capacity(found, trials)
    picks: list[tuple[str | None, str | None, str]] = []
    for item in found:
        evidence = "; ".join(item.evidence)
        label = "no task_id recorded" if item.claimed is None else \
            f"task_id {item.claimed!r}" + ("" if item.claimed in run.tasks
                                           else " (not among the file's tasks)")
        at_label = item.claimed if item.claimed in run.tasks else None
        if pairing == "label":
            ok = item.claimed in item.candidates
            picks.append((at_label, None if ok else f"{label}, but {evidence}", evidence))
        elif len(item.candidates) == 1:
            picks.append((item.candidates[0], None, f"{label}; {evidence}"))
        else:
            reason = f"{label}; {evidence}" + (f"; still {_names(sorted(item.candidates))}"
                                               if item.candidates else "")
            picks.append((at_label, reason, reason))
    return _number_trials(run, picks)


def _by_capacity(found: list[_Found], trials: int) -> None:
    """Drop from undecided simulations the tasks already held by `trials` decided ones."""
    while True:
        held = Counter(item.candidates[0] for item in found if len(item.candidates) == 1)
        full = {task_id for task_id, n in held.items() if n >= trials}
        undecided = [item for item in found if len(item.candidates) > 1]
        for item in undecided:
            dropped = sorted(set(item.candidates) & full)
            _narrow(item, lambda t: t not in full,  # noqa: B023 (called at once)
                    f"{_names(dropped)} already paired {trials} time(s) (the file's trials)")
        if not any(len(item.candidates) == 1 for item in undecided):
            return


def _number_trials(run: Run, picks: list[tuple[str | None, str | None, str]]
                   ) -> list[Assignment]:
    """Trials as recorded where free; else the next free one, named in the evidence."""
    recorded: list[Any] = [sim.get("trial") for sim in run.simulations]
    taken: set[tuple[str, int]] = set()
    kept = []
    for (task_id, _, _), trial in zip(picks, recorded, strict=True):
        kept.append(task_id is not None and _is_int(trial) and (task_id, trial) not in taken)
        if kept[-1]:
            taken.add((str(task_id), trial))
    assignments = []
    for (task_id, excluded, evidence), trial, as_recorded in zip(picks, recorded, kept,
                                                                 strict=True):
        number: int = trial if as_recorded else 0
        if task_id is not None and not as_recorded:
            while (task_id, number) in taken:
                number += 1
            taken.add((task_id, number))
            how = "not recorded" if not _is_int(trial) else f"recorded {trial}"
            evidence += f"; trial {number} ({how})"
        assignments.append(Assignment(task_id, number, excluded, evidence))
    return assignments


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
