"""Running τ² episodes in tests: the plugin's cases (each domain's loaded once per process), a
reference policy or a scripted backend as the agent, the loop with the reference user or a
backend as the user, and the evaluation of the episodes into per-case rows (write units
included) and triples, as the evaluate stage builds them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from toolcalib.backends.base import Answer, Request
from toolcalib.backends.policy import PolicyBackend
from toolcalib.benchmarks import get_benchmark, settings
from toolcalib.classify.profiles import get_profile, read_alone
from toolcalib.classify.trajectory import action_rows
from toolcalib.config import parse_model_spec
from toolcalib.evaluate import STRUCTURAL_PROFILE, write_units
from toolcalib.generate import run_cases
from toolcalib.metrics.rows import case_rows, gold_rows, triple_rows
from toolcalib.records import Case, Emission, ToolCall, Trajectory
from toolcalib.stages.evaluate import score_rows
from toolcalib.stages.generate import USER_PROFILE
from toolcalib.variants import get_variant

TAU2 = get_benchmark("tau2")


@cache
def _domain_cases(wheel: str, domain: str) -> tuple[Case, ...]:
    return tuple(TAU2.load_cases(wheel, domain))


def domain_cases(wheel: str | Path, domain: str) -> list[Case]:
    return list(_domain_cases(str(wheel), domain))


def cases_of(wheel: str | Path, *ids: str) -> list[Case]:
    """The cases with these ids (`<domain>_<task id>`), in the order given."""
    return [next(c for c in _domain_cases(str(wheel), case_id.split("_")[0]) if c.id == case_id)
            for case_id in ids]


def policy(name: str) -> Any:
    """The reference policy `name` as a backend (its τ² meaning where the plugin has one)."""
    return PolicyBackend(parse_model_spec(json.dumps(
        {"name": name, "backend": "policy", "options": {"policy": name}})), TAU2.policies)


def text(content: str) -> Emission:
    return Emission(text=content, finish_reason="stop")


def call(name: str, **arguments: Any) -> Emission:
    return Emission(tool_calls=[ToolCall(name=name, arguments=arguments)], structured=True,
                    parse="ok", finish_reason="tool_calls")


@dataclass
class Scripted:
    """A backend answering each request with `answer(request)`, recording every request."""

    answer: Callable[[Request], Answer]
    name: str = "scripted"
    cacheable: bool = False
    requests: list[Request] = field(default_factory=list)

    def identity(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name}

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        self.requests += requests
        return [self.answer(request) for request in requests]


def episodes(wheel: str | Path, cases: Iterable[Case], agent: Any,
             options: dict[str, Any] | None = None, user: Any = None) -> list[Trajectory]:
    """Each case's episode under the loop with `options` (the reference user unless
    `options["user"]` names `user`, the backend playing it)."""
    return list(run_cases(cases, agent, get_variant("baseline"),
                          lambda c: TAU2.environment(wheel, c),
                          loop=TAU2.loop(settings(TAU2.loop_settings, options), user, wheel,
                                         read_alone(USER_PROFILE)),
                          user=user))


@dataclass
class Evaluated:
    scores: list[Any]
    rows: list[dict[str, Any]]
    """The per-case rows: the cases' own, then the write units."""
    triples: dict[tuple[str, str], dict[str, Any]]
    """The triples by (category, gold class)."""

    def cell(self, category: str, gold: str) -> dict[str, Any]:
        return self.triples[category, gold]

    def units(self) -> list[dict[str, Any]]:
        return [row for row in self.rows if "#write" in row["case_id"]]


def evaluate(wheel: str | Path, cases: list[Case], trajectories: list[Trajectory]
             ) -> Evaluated:
    """The evaluate stage's rows of these episodes (profile `default`, no gold records: τ²'s
    scorer needs none)."""
    profile = get_profile("default")
    pairs = list(zip(cases, trajectories, strict=True))
    scores = [TAU2.score(str(wheel), case, trajectory, None) for case, trajectory in pairs]
    actions = [row for case, trajectory in pairs for row in action_rows(trajectory, case,
                                                                        profile)]
    units = [row for (case, trajectory), score in zip(pairs, scores, strict=True)
             for row in write_units(TAU2, profile, case, trajectory, score)]
    reads = read_alone(STRUCTURAL_PROFILE)
    structural = {(t.model, t.variant, c.benchmark, c.category, c.id):
                  TAU2.structural(c, t, s, reads) for (c, t), s in zip(pairs, scores, strict=True)}
    rows = case_rows(actions, score_rows(scores), gold_rows(cases), structural) + units
    return Evaluated(scores, rows, {(row["category"], row["gold_action"]): row
                                    for row in triple_rows(rows)})
