"""Our multi-turn verdicts against BFCL's own checker (imported from the wheel, tests only)."""

from __future__ import annotations

import importlib
import re
import sys
from itertools import count
from pathlib import Path

import pytest

from toolcalib.backends import make_backend
from toolcalib.benchmarks.bfcl.checker import (
    EMPTY_TURN,
    FORCE_TERMINATED,
    IRRELEVANCE_CALL,
    RESPONSE_MISMATCH,
    STATE_MISMATCH,
    decoded_calls,
    missing_items,
    score_case,
    score_multi_turn,
)
from toolcalib.benchmarks.bfcl.gold import GoldTrace, case_environment, gold_trace, read_gold
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.config import ModelSpec
from toolcalib.execute.calls import render_call
from toolcalib.generate import run_cases
from toolcalib.jsonio import InputError, dumps, parse_line, read_records
from toolcalib.records import Emission, Step, ToolCall, Trajectory, TurnTrace
from toolcalib.variants import get_variant

MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_long_context",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
)
REFERENCE = "bfcl_eval.eval_checker.multi_turn_eval"
REAL = Path(__file__).parent / "data" / "real_trajectories"
"""Multi-turn trajectories of the shipped models from the default run, every variant
(`<model>--<variant>--<category>.jsonl`)."""
NAMES = count()

Plan = list[list[list[ToolCall]]]
"""Per turn, per step, the calls the model emits."""


@pytest.fixture(scope="module")
def cases(bfcl_release):
    return [case for category in MULTI_TURN for case in load_cases(bfcl_release, category)]


@pytest.fixture(scope="module")
def golds(bfcl_release, cases):
    return {case.id: gold_trace(case, bfcl_release) for case in cases}


@pytest.fixture(scope="module")
def reference(bfcl_wheel):
    """BFCL's checker and executor modules, imported from the wheel."""
    if str(bfcl_wheel) not in sys.path:
        sys.path.append(str(bfcl_wheel))
    checker = importlib.import_module(f"{REFERENCE}.multi_turn_checker")
    return checker, importlib.import_module(f"{REFERENCE}.multi_turn_utils")


def trajectory(case, plan: Plan, outcome: str = "completed") -> Trajectory:
    """Each turn: one step per call list, then a text-only step that ends the turn."""
    turns = []
    for index, steps in enumerate(plan):
        emissions = [Emission(tool_calls=calls, parse="ok") for calls in steps]
        emissions.append(Emission(text="done"))
        turns.append(
            TurnTrace(
                index=index,
                steps=[Step(index=i, emission=e) for i, e in enumerate(emissions)],
                ended="no_call",
            )
        )
    return Trajectory(
        case_id=case.id,
        benchmark="bfcl",
        category=case.category,
        model="m",
        variant="v",
        outcome=outcome,
        turns=turns,
        messages=[],
    )


def reference_verdict(reference, case, plan: Plan) -> dict:
    """BFCL's `_evaluate_single_multi_turn_entry` on call strings rendered from the plan."""
    checker, utils = reference
    truth = [turn.gold_calls_source for turn in case.turns]
    if len(plan) != len(truth):
        return {"valid": False, "error_type": FORCE_TERMINATED}
    decoded = [[[render_call(c) for c in calls] for calls in steps if calls] for steps in plan]
    entry = {
        "id": case.id,
        **{k: case.environment[k] for k in ("initial_config", "involved_classes")},
    }
    name = f"ref{next(NAMES)}"  # BFCL keeps instances in module globals keyed by this name
    try:
        return checker.multi_turn_checker(decoded, truth, entry, case.category, name)
    finally:
        for key in [key for key in vars(utils) if key.startswith(f"{name}_")]:
            del vars(utils)[key]


def reference_turn(verdict: dict) -> int | None:
    """The turn BFCL failed at: from its message, else from its per-turn execution log."""
    match = re.search(r"for turn (\d+)", verdict.get("error_message", ""))
    if match:
        return int(match.group(1))
    log = verdict.get("execution_result") or verdict.get("details", {}).get("execution_result")
    return len(log) - 1 if log else None


def gold_plan(case) -> Plan:
    return [[list(turn.gold_calls)] if turn.gold_calls else [] for turn in case.turns]


def changed(call: ToolCall) -> ToolCall:
    key, value = next(iter(call.arguments.items()))
    if isinstance(value, bool):
        new = not value
    elif isinstance(value, int | float):
        new = value + 1
    elif isinstance(value, str):
        new = value + "_x"
    elif isinstance(value, list):
        new = value[:-1] if value else ["x"]
    else:
        new = "x"
    return call.replace(**{"arguments": {**call.arguments, key: new}})


def mutations(case, seed: int) -> dict[str, tuple[Plan, str]]:
    """Small deviations from the ground truth at one turn that has calls (chosen by seed)."""
    calls = [list(turn.gold_calls) for turn in case.turns]
    full = [t for t, turn_calls in enumerate(calls) if turn_calls]
    target = full[seed % len(full)]
    last = len(calls) - 1

    def plan(edit) -> Plan:
        edited = [list(turn_calls) for turn_calls in calls]
        edit(edited)
        return [[turn_calls] if turn_calls else [] for turn_calls in edited]

    found = [
        (t, i) for t in [target, *range(len(calls))] for i, c in enumerate(calls[t]) if c.arguments
    ]
    result = {
        "drop": (plan(lambda c: c[target].pop(seed % len(c[target]))), "completed"),
        "empty": (plan(lambda c: c[target].clear()), "completed"),
        "reorder": (plan(lambda c: c[target].reverse()), "completed"),
        "stop": ([[turn_calls] for turn_calls in calls[: target + 1]], "step_cap"),
        "split": ([[[call] for call in turn_calls] for turn_calls in calls], "completed"),
    }
    extra = [calls[target][0], ToolCall(name="no_such_function", arguments={"x": 1})]
    result["extra"] = (plan(lambda c: c[target].extend(extra)), "completed")
    if found:
        t, i = found[0]
        result["change"] = (plan(lambda c: c[t].__setitem__(i, changed(c[t][i]))), "completed")
    if target < last and calls[target + 1]:
        result["early"] = (plan(lambda c: c[target].append(c[target + 1].pop(0))), "completed")
    if target == last:
        del result["stop"]  # BFCL scores a step cap in the last turn normally; we fail it
    return result


def test_gold_trajectories_pass_ours_and_bfcl(bfcl_release, cases, golds, reference):
    assert len(cases) == 800
    for case in cases:
        plan = gold_plan(case)
        score = score_multi_turn(case, trajectory(case, plan), golds[case.id], bfcl_release)
        assert score.scored and score.passed, (case.id, score.error_message)
        assert reference_verdict(reference, case, plan) == {"valid": True}, case.id


def test_gold_traces_survive_json(golds):
    for gold in golds.values():
        assert parse_line(dumps(gold), GoldTrace, "gold.jsonl", 1) == gold
        assert gold.has_turns(len(gold.turns)) and not gold.has_turns(len(gold.turns) + 1)


def test_read_gold_names_a_broken_turn(tmp_path, golds):
    gold = next(g for g in golds.values() if len(g.turns) > 1)
    text, key = dumps(gold), '{"results":'
    second = text.index(key, text.index(key) + 1)  # turn 1's results become a number
    path = tmp_path / "gold.jsonl"
    path.write_text(f"{text[:second]}{key}7,\"x\":{text[second + len(key):]}\n", "utf-8")
    golds = read_gold(path)  # the case ids alone: a trace is checked when asked for
    with pytest.raises(InputError, match=r"gold.jsonl:1: field 'turns.1.results'"):
        golds.get(gold.case_id)
    path.write_text(f"{text[:-1]}\n{{\"category\":\"x\"}}\n", "utf-8")
    with pytest.raises(InputError, match=r"gold.jsonl:1: not valid JSON"):
        read_gold(path)
    path.write_text(f"{text}\n{{\"category\":\"x\"}}\n", "utf-8")
    with pytest.raises(InputError, match=r"gold.jsonl:2: field 'case_id': Object missing"):
        read_gold(path)
    path.write_text(f"{text}\n", "utf-8")
    assert read_gold(path)[gold.case_id] == gold and list(read_gold(path)) == [gold.case_id]


def test_mutated_verdicts_equal_bfcl(bfcl_release, cases, golds, reference):
    seen: dict[str | None, int] = {}
    for seed, case in enumerate(cases):
        for kind, (plan, outcome) in mutations(case, seed).items():
            ours = score_case(case, trajectory(case, plan, outcome), golds[case.id], bfcl_release)
            theirs = reference_verdict(reference, case, plan)
            where = (case.id, kind, ours.error_type, theirs.get("error_type"))
            assert ours.passed == theirs["valid"], where
            assert ours.error_type == theirs.get("error_type"), where
            if not ours.passed and ours.error_type != FORCE_TERMINATED:
                assert ours.failed_turn == reference_turn(theirs), where
            if ours.error_type == STATE_MISMATCH:
                assert ours.error_message == theirs["error_message"], where
                assert set(ours.details["differences"]) == set(theirs["details"]["differences"])
            if ours.error_type == RESPONSE_MISMATCH:
                assert ours.details["missing_items"] == theirs["details"]["missing_items"], where
            seen[ours.error_type] = seen.get(ours.error_type, 0) + 1
    assert set(seen) == {None, FORCE_TERMINATED, EMPTY_TURN, STATE_MISMATCH, RESPONSE_MISMATCH}
    assert min(seen.values()) >= 50, seen


def test_executor_matches_bfcl_results(bfcl_release, cases, golds, reference):
    """Every result string of the ground truth, plus failing probes, equals BFCL's own.

    (BFCL `eval`s in its executor's scope, so a name like `long_context` or `print` resolves to
    its locals or builtins there; we answer any name that is not a method as undefined.)
    """
    _, utils = reference
    probes = [
        ToolCall(name="no_such_function", arguments={"a": 1}),
        ToolCall(name="_load_scenario", arguments={"scenario": {}}),
        ToolCall(name="root"),  # an attribute, not a method
        ToolCall(name="kill", arguments={"pid": 1}),
        ToolCall(name="run"),
    ]
    for case in cases:
        env = case.environment
        ours = golds[case.id]
        name = f"ref{next(NAMES)}"
        try:
            for index, turn in enumerate(case.turns):
                theirs, _ = utils.execute_multi_turn_func_call(
                    turn.gold_calls_source,
                    env["initial_config"],
                    env["involved_classes"],
                    name,
                    case.id,
                    long_context=env["long_context"],
                )
                assert ours.turns[index].results == theirs, (case.id, index)
            first = case.turns[0].gold_calls[:1]
            bad = [*probes, *[c.replace(**{"arguments": {"bogus": 1}}) for c in first]]
            theirs, _ = utils.execute_multi_turn_func_call(
                [render_call(c) for c in bad],
                env["initial_config"],
                env["involved_classes"],
                name + "_probe",
                case.id,
                long_context=env["long_context"],
            )
            assert case_environment(case, bfcl_release).execute_all(bad) == theirs, case.id
        finally:
            for key in [key for key in vars(utils) if key.startswith(f"{name}_")]:
                del vars(utils)[key]


def test_infrastructure_outcomes_are_not_scored(bfcl_release, cases, golds):
    case = cases[0]
    for outcome in ("error", "context_overflow"):
        run = trajectory(case, gold_plan(case)[:1], outcome).replace(**{"error": "boom"})
        score = score_case(case, run, golds[case.id], bfcl_release)
        assert (score.scored, score.passed, score.error_type) == (False, None, None)
        assert outcome in score.error_message and "boom" in score.error_message


def assert_verdicts_equal_bfcl(trajectories, by_id, golds, release, reference) -> int:
    """Ours and BFCL's checker on each trajectory (calls as the harness executed them)."""
    checked = 0
    for real in trajectories:
        case = by_id[real.case_id]
        ours = score_case(case, real, golds[case.id], release)
        if not ours.scored:
            continue
        plan = [[calls for step in turn.steps
                 if not step.dropped and (calls := decoded_calls(step.emission))]
                for turn in real.turns]
        theirs = reference_verdict(reference, case, plan)
        where = (real.model, real.variant, case.id, ours.error_type, theirs.get("error_type"))
        assert (ours.passed, ours.error_type) == (theirs["valid"], theirs.get("error_type")), where
        checked += 1
    return checked


@pytest.mark.parametrize("policy", ["oracle", "always_call", "never_call", "always_ask"])
def test_policy_verdicts_equal_bfcl(bfcl_release, cases, golds, reference, policy):
    backend = make_backend(ModelSpec(name=f"policy-{policy}", backend="policy",
                                     options={"policy": policy}))
    sample = cases[::8]  # 100 cases, 25 of each category
    trajectories = run_cases(sample, backend, get_variant("baseline"),
                             lambda case: case_environment(case, bfcl_release))
    by_id = {case.id: case for case in sample}
    assert assert_verdicts_equal_bfcl(trajectories, by_id, golds, bfcl_release, reference) == 100


def test_real_model_verdicts_equal_bfcl(bfcl_release, cases, golds, reference):
    by_id = {case.id: case for case in cases}
    trajectories = [real for path in sorted(REAL.glob("*.jsonl"))
                    for real in read_records(path, Trajectory)]
    assert assert_verdicts_equal_bfcl(trajectories, by_id, golds, bfcl_release, reference) == 20


def test_step_cap_is_scored_as_bfcl_does(bfcl_release, cases, golds):
    """A cap before the last turn ends the case (force-terminated); a cap in the last turn
    leaves BFCL's turn counts equal, so that trajectory is checked like any other."""
    case = cases[0]
    last = score_case(
        case, trajectory(case, gold_plan(case), "step_cap"), golds[case.id], bfcl_release
    )
    assert (last.scored, last.passed) == (True, True)
    early = score_case(
        case, trajectory(case, gold_plan(case)[:1], "step_cap"), golds[case.id], bfcl_release
    )
    assert (early.passed, early.error_type, early.failed_turn) == (False, FORCE_TERMINATED, 0)


def test_recorded_results_are_not_trusted(bfcl_release, cases, golds):
    case = cases[0]
    run = trajectory(case, gold_plan(case)[:1] + [[] for _ in case.turns[1:]])
    faked = [
        t.replace(**{"steps": [s.replace(**{"results": r.results}) for s in t.steps]}
        )
        for t, r in zip(run.turns, golds[case.id].turns, strict=True)
    ]
    score = score_case(case, run.replace(**{"turns": faked}), golds[case.id], bfcl_release)
    assert (score.passed, score.error_type, score.failed_turn) == (False, EMPTY_TURN, 1)


def test_malformed_steps_and_empty_steps_are_skipped(bfcl_release, cases, golds):
    case = cases[0]
    run = trajectory(case, gold_plan(case))
    turns = list(run.turns)
    steps = list(turns[0].steps)
    bad = Emission(
        tool_calls=[ToolCall(name="rm", arguments={"file_name": "x"})], parse="malformed"
    )
    steps.insert(0, Step(index=0, emission=bad))
    turns[0] = turns[0].replace(**{"steps": steps})
    score = score_case(case, run.replace(**{"turns": turns}), golds[case.id], bfcl_release)
    assert score.passed


def test_mismatched_inputs_raise(bfcl_release, cases, golds):
    case, other = cases[0], cases[1]
    with pytest.raises(InputError, match="scored against"):
        score_case(case, trajectory(other, gold_plan(other)), golds[case.id], bfcl_release)
    with pytest.raises(InputError, match="does not fit"):
        score_case(case, trajectory(case, gold_plan(case)), golds[other.id], bfcl_release)
    with pytest.raises(InputError, match="needs its gold trace"):
        score_case(case, trajectory(case, gold_plan(case)), None, bfcl_release)
    with pytest.raises(InputError, match="trajectory has"):
        score_case(case, trajectory(case, gold_plan(case) + [[]]), golds[case.id], bfcl_release)


@pytest.mark.parametrize("category", ["irrelevance", "live_irrelevance"])
def test_irrelevance(bfcl_release, category):
    case = load_cases(bfcl_release, category)[0]
    call = (
        ToolCall(name=case.tools[0]["name"], arguments={"x": 1})
        if case.tools
        else ToolCall(name="anything")
    )
    text = trajectory(case, [[]])
    called = trajectory(case, [[[call]]])
    malformed = text.replace(**{
            "turns": [
                TurnTrace(
                    index=0,
                    ended="single_step",
                    steps=[
                        Step(
                            index=0,
                            emission=Emission(text="f(", parse="malformed", parse_error="syntax"),
                        )
                    ],
                )
            ]
        }
    )
    assert score_case(case, text, None, None).passed
    assert score_case(case, malformed, None, None).passed
    failed = score_case(case, called, None, None)
    assert (failed.passed, failed.error_type, failed.failed_turn) == (False, IRRELEVANCE_CALL, 0)
    overflow = text.replace(**{"outcome": "context_overflow"})
    assert not score_case(case, overflow, None, None).scored


def test_missing_items_is_a_multiset_difference():
    assert missing_items(["a", "b", "a"], ["b", "a", "c"]) == ["a"]
    assert missing_items(["a"], ["a", "a"]) == []
    assert missing_items([], []) == []
