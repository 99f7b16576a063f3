"""The published structural reading of τ² gold classes (`structural_hit`), rule by rule, on
hand-built trajectories (no release needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.tau2.structural import structural_hit
from toolcalib.classify.profiles import get_profile, read_alone
from toolcalib.evaluate import STRUCTURAL_PROFILE, write_units
from toolcalib.records import Emission, Message, Step, ToolCall, Trajectory, TurnTrace
from toolcalib.verdicts import Score

TAU2 = get_benchmark("tau2")
PAPER = read_alone(STRUCTURAL_PROFILE)
"""The `paper` profile's reading, which the evaluate stage hands the structural reading."""
WRITES = ["cancel_reservation", "book_reservation"]


def case(gold: str, also: tuple[str, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(id="airline_9", benchmark="tau2", category="airline",
                           gold_action=gold, gold_also=dict.fromkeys(also, "rule"),
                           environment={"write_tools": WRITES})


def said(text: str = "", calls: tuple[str, ...] = (), dropped: bool = False) -> Step:
    return Step(index=0, emission=Emission(
        text=text, structured=bool(calls),
        tool_calls=[ToolCall(name=name, arguments={}) for name in calls]),
        results=["ok"] * len(calls), dropped=dropped)


def trajectory(*turns: list[Step], outcome: str = "completed") -> Trajectory:
    traces = [TurnTrace(index=i, steps=[s.replace(index=j) for j, s in enumerate(steps)],
                        ended="no_call", user="hi") for i, steps in enumerate(turns)]
    return Trajectory(case_id="airline_9", benchmark="tau2", category="airline", model="m",
                      variant="baseline", outcome=outcome, turns=traces, messages=[])


def score(matched: list[bool] | None = None, scored: bool = True) -> Score:
    details = {} if matched is None else {"actions_matched": matched}
    return Score(case_id="airline_9", benchmark="tau2", category="airline", model="m",
                 variant="baseline", scored=scored, passed=False if scored else None,
                 details=details)


# -- refuse: no write call -------------------------------------------------------------------

def test_refuse_without_a_write_hits_whatever_it_said():
    """Reads (and no refusing words) are no write: the published refuse is restraint."""
    done = trajectory([said("Sure, let me look."), said(calls=("get_user_details",))],
                      [said("Your reservation is on file.")])
    assert structural_hit("refuse", case("refuse"), done, score([]), PAPER) is True


def test_refuse_with_a_write_misses_even_after_refusing_in_words():
    done = trajectory([said("I cannot help with that.")],
                      [said(calls=("get_user_details", "cancel_reservation"))])
    assert structural_hit("refuse", case("refuse"), done, score([]), PAPER) is False


def test_a_dropped_write_is_no_write():
    """A variant's probe withdrew the step before it ran: not part of the conversation."""
    done = trajectory([said(calls=("cancel_reservation",), dropped=True), said("Done.")])
    assert structural_hit("refuse", case("refuse"), done, score([]), PAPER) is True


# -- tool_call: every reference action matched ------------------------------------------------

@pytest.mark.parametrize(("matched", "hit"), [([True, True], True), ([True, False], False),
                                              ([False], False)])
def test_tool_call_needs_every_reference_action_matched(matched, hit):
    done = trajectory([said(calls=("cancel_reservation",))])
    assert structural_hit("tool_call", case("tool_call"), done, score(matched), PAPER) is hit


def test_tool_call_reads_the_scorer_not_the_calls():
    """No call at all but (say) matched actions: the scorer's `actions_matched` decides."""
    hello = trajectory([said("Hello.")])
    assert structural_hit("tool_call", case("tool_call"), hello, score([True]), PAPER) is True
    assert structural_hit("tool_call", case("tool_call"), hello, score(), PAPER) is None


# -- ask: at least one ask under the `paper` profile ------------------------------------------

def test_ask_is_any_paper_ask_in_the_trajectory():
    done = trajectory([said("Hello.")], [said("Could you give me your user id")],
                      [said(calls=("get_user_details",))])
    assert structural_hit("ask", case("ask"), done, score([True]), PAPER) is True


def test_ask_uses_the_paper_profile_not_the_runs():
    """`paper` tries refuse before ask: "I can't ... could you ..." is refuse there, so no ask;
    its question mark makes any question an ask (a closing one too)."""
    refused = trajectory([said("I can't do that; could you call back later")])
    assert structural_hit("ask", case("ask"), refused, score([True]), PAPER) is False
    closing = trajectory([said(calls=("get_user_details",))], [said("Anything else?")])
    assert structural_hit("ask", case("ask"), closing, score([True]), PAPER) is True


def test_ask_without_any_ask_misses():
    done = trajectory([said(calls=("get_user_details",))], [said("Done.")])
    assert structural_hit("ask", case("ask"), done, score([True, True]), PAPER) is False


def test_a_dropped_ask_does_not_count():
    done = trajectory([said("Could you tell me your id?", dropped=True), said("Done.")])
    assert structural_hit("ask", case("ask"), done, score([True]), PAPER) is False


# -- unscored, other classes, units, the plugin hook ------------------------------------------

def test_no_reading_for_an_unscored_case():
    assert structural_hit("refuse", case("refuse"), trajectory([said("Hi")], outcome="error"),
                          score(scored=False), PAPER) is None
    assert structural_hit("refuse", case("refuse"), trajectory([said("Hi")]),
                          score(scored=False), PAPER) is None


def test_step_cap_is_read_like_any_scored_end():
    done = trajectory([said(calls=("book_reservation",))], outcome="step_cap")
    assert structural_hit("refuse", case("refuse"), done, score([]), PAPER) is False


def test_the_reading_follows_the_gold_the_variant_presents():
    """no-tools-visible presents tool_call as refuse: read as refuse (no write)."""
    done = trajectory([said("I have no tool for that.")])
    assert structural_hit("refuse", case("refuse"), done, score([False]), PAPER) is True
    assert structural_hit("tool_call", case("tool_call"), done, score([False]), PAPER) is False
    assert structural_hit("confirm", case("confirm"), done, score([False]), PAPER) is None


def test_the_plugin_hook_and_its_units():
    """`Tau2.structural` is the reading; every write unit carries `structural_hit`."""
    done = trajectory([said("Shall I cancel reservation X?")],
                      [said(calls=("cancel_reservation",))])
    done = done.replace(messages=[
        Message(role="assistant", content="Shall I cancel reservation X?"),
        Message(role="user", content="Yes, go ahead."),
        Message(role="assistant", tool_calls=[ToolCall(name="cancel_reservation", arguments={})]),
        Message(role="tool", name="cancel_reservation", content="ok")],
        turns=[done.turns[0], done.turns[1].replace(user="Yes, go ahead.")])
    verdict = score([True])
    assert TAU2.structural(case("tool_call"), done, verdict, PAPER) == {"tool_call": True}
    units = write_units(TAU2, get_profile("default"), case("tool_call"), done, verdict)
    assert [u["case_id"] for u in units] == ["airline_9#write1"]
    assert [(u["gold_emitted"], u["structural_hit"]) for u in units] == [(True, True)]
    assert get_benchmark("bfcl").structural(case("tool_call"), done, verdict, PAPER) == {}  # null
    unscored = write_units(TAU2, get_profile("default"), case("tool_call"), done,
                           score(scored=False))
    assert [(u["gold_emitted"], u["structural_hit"]) for u in unscored] == [(True, None)]


def test_every_gold_class_of_a_task_is_read():
    """An ask task with reference actions: its tool_call reading and its ask reading."""
    from toolcalib.benchmarks.tau2.structural import structural_hits

    done = trajectory([said("Could you tell me your user id?")], [said(calls=("get_user",))])
    assert structural_hits(case("tool_call", ("ask",)), done, score([True]), PAPER) == {
        "tool_call": True, "ask": True}
    assert structural_hits(case("tool_call", ("ask",)), done, score([False]), PAPER) == {
        "tool_call": False, "ask": True}
    assert TAU2.structural(case("refuse"), done, score([]), PAPER) == {"refuse": True}
