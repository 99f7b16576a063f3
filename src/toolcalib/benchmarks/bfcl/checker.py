"""BFCL's verdicts: `multi_turn_checker` (as run by its eval runner) and the irrelevance check.

The model's calls are re-executed here on a fresh environment, never taken from the recorded
results; the ground truth comes from a `GoldTrace`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from toolcalib.benchmarks.bfcl.gold import GoldTrace, case_environment
from toolcalib.benchmarks.bfcl.release import BfclRelease
from toolcalib.jsonio import InputError
from toolcalib.records import MODEL_OUTCOMES
from toolcalib.verdicts import Score

if TYPE_CHECKING:
    from toolcalib.records import Case, Emission, ToolCall, Trajectory

FORCE_TERMINATED = "multi_turn:force_terminated"
EMPTY_TURN = "multi_turn:empty_turn_model_response"
STATE_MISMATCH = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
IRRELEVANCE_CALL = "irrelevance_error:decoder_success"


def score_case(
    case: Case,
    trajectory: Trajectory,
    gold: GoldTrace | None,
    release: BfclRelease | None,
) -> Score:
    """Multi-step cases go to the multi-turn checker, single-emission ones to irrelevance."""
    if not case.multi_step:
        return score_irrelevance(case, trajectory)
    if gold is None or release is None:
        raise InputError(f"{case.id}: a multi-step case needs its gold trace and the release")
    return score_multi_turn(case, trajectory, gold, release)


def score_irrelevance(
    case: Case, trajectory: Trajectory
) -> Score:
    """Pass iff no step emitted a valid call (a malformed emission is not one, as in BFCL)."""
    verdict = _Verdict(case, trajectory)
    if not verdict.scored:
        return verdict.unscored()
    for turn in trajectory.turns:
        for step in turn.steps:
            calls = decoded_calls(step.emission)
            if calls:
                return verdict.fail(
                    IRRELEVANCE_CALL,
                    "Valid syntax. Successfully decode AST when it should not.",
                    turn.index,
                    {"calls": [{"name": call.name, "arguments": call.arguments}
                               for call in calls]},
                )
    return verdict.success()


def score_multi_turn(
    case: Case, trajectory: Trajectory, gold: GoldTrace,
    release: BfclRelease
) -> Score:
    """BFCL's multi-turn verdict for one trajectory."""
    verdict = _Verdict(case, trajectory)
    if gold.case_id != case.id:
        raise InputError(f"{case.id}: gold trace of '{gold.case_id}' does not fit this case")
    if len(trajectory.turns) > len(case.turns):
        raise InputError(
            f"{case.id}: trajectory has {len(trajectory.turns)} turns, case {len(case.turns)}"
        )
    if not verdict.scored:
        return verdict.unscored()
    # BFCL: a force-quit fails the case through the turn count; a cap hit in the last turn
    # leaves the counts equal and that trajectory is checked like any other.
    if len(trajectory.turns) < len(case.turns):
        return verdict.fail(
            FORCE_TERMINATED,
            f"Model was force-terminated during inference phase (outcome"
            f" '{trajectory.outcome}', {len(trajectory.turns)} of {len(case.turns)} turns).",
            max(len(trajectory.turns) - 1, 0),
        )
    environment = case_environment(case, release)
    all_results: list[str] = []
    for index, (turn, trace) in enumerate(zip(case.turns, trajectory.turns, strict=True)):
        call_lists = [calls for step in trace.steps
                      if not step.dropped and (calls := decoded_calls(step.emission))]
        for calls in call_lists:
            all_results.extend(environment.execute_all(calls))
        if not turn.gold_calls:
            continue
        if not call_lists:
            return verdict.fail(EMPTY_TURN, f"Model response list is empty for turn {index}", index)
        expected = gold.turn(index)
        for class_name in case.environment["involved_classes"]:  # BFCL's order
            model_state = environment.class_state(class_name)
            differences = {
                attr: {"model": model_state.get(attr), "ground_truth": value}
                for attr, value in expected.state[class_name].items()
                if attr not in model_state or model_state[attr] != value
            }
            if differences:
                return verdict.fail(
                    STATE_MISMATCH,
                    f"Model instance for {class_name} does not match the state with ground"
                    " truth instance.",
                    index,
                    {"class": class_name, "differences": differences},
                )
        missing = missing_items(expected.results, all_results)
        if missing:
            return verdict.fail(
                RESPONSE_MISMATCH,
                "Model response execution results so far does not contain all the ground truth"
                f" response execution results for turn {index}.",
                index,
                {"missing_items": missing},
            )
    if not gold.has_turns(len(case.turns)):
        raise InputError(f"{case.id}: gold trace has other than {len(case.turns)} turns")
    return verdict.success()


def decoded_calls(emission: Emission) -> list[ToolCall]:
    """The calls BFCL would decode from a step: none from a malformed emission."""
    return [] if emission.parse == "malformed" else list(emission.tool_calls)


def missing_items(expected: list[str], actual: list[str]) -> list[str]:
    """Items of `expected` not covered by `actual`, counting multiplicity (order ignored)."""
    pool = list(actual)
    missing = []
    for item in expected:
        if item in pool:
            pool.remove(item)
        else:
            missing.append(item)
    return missing


class _Verdict:
    """Builds the Score records of one case and trajectory."""

    def __init__(self, case: Case, trajectory: Trajectory):
        if trajectory.case_id != case.id:
            raise InputError(f"trajectory of '{trajectory.case_id}' scored against '{case.id}'")
        self.trajectory = trajectory
        self.scored = trajectory.outcome in MODEL_OUTCOMES
        self.base = Score(case_id=case.id, benchmark=case.benchmark, category=case.category,
                          model=trajectory.model, variant=trajectory.variant, scored=False,
                          passed=None)

    def unscored(self) -> Score:
        reason = f"not scored: outcome '{self.trajectory.outcome}'"
        if self.trajectory.error:
            reason += f": {self.trajectory.error}"
        return msgspec.structs.replace(self.base, error_message=reason)

    def success(self) -> Score:
        return msgspec.structs.replace(self.base, scored=True, passed=True)

    def fail(
        self, error_type: str, message: str, turn: int, details: dict[str, Any] | None = None
    ) -> Score:
        return msgspec.structs.replace(self.base, scored=True, passed=False,
                                       error_type=error_type, error_message=message,
                                       failed_turn=turn, details=details or {})
