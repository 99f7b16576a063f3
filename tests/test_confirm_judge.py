"""The judge's confirm verdict on a write call: the strict yes/no parser, the versioned rubric
and the request it builds (the call, the last 10 messages, each cut), and the plumbing through
an OpenAI-compatible server (tests/support/scripted_server.py, no model) and the response store: a
rerun asks nothing, an unparsed reply is counted and not confirmed, a failed request raises
`JudgeUnavailable` and stores nothing. Rule profiles keep the rule's verdict; the τ² write
units follow the profile of the evaluate job."""

from __future__ import annotations

import pytest

from tests.support.scripted_server import ScriptedServer
from toolcalib.backends import make_backend
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.classify.confirm import rule_verdict
from toolcalib.classify.confirm_judge import load_confirm_rubric, parse_confirm_reply
from toolcalib.classify.judge import JudgeProfile, JudgeUnavailable
from toolcalib.classify.profiles import get_profile
from toolcalib.config import ModelSpec
from toolcalib.evaluate import write_units
from toolcalib.records import Message, ToolCall
from toolcalib.writes import WriteContext

CANCEL = ToolCall(name="cancel_reservation", arguments={"reservation_id": "ZFA04Y"})
ASKED = "Shall I cancel reservation ZFA04Y (yes/no)?"


def context(reply: str, call: ToolCall = CANCEL, before: int = 0) -> WriteContext:
    chatter = [Message(role="user", content=f"filler {i}") for i in range(before)]
    messages = (*chatter, Message(role="assistant", content=ASKED),
                Message(role="user", content=reply))
    return WriteContext(call=call, messages=messages, agent_text=ASKED, user_reply=reply)


@pytest.mark.parametrize(("reply", "confirmed"), [
    ("yes", True), ("Yes.", True), (" NO \n", False), ("no.", False),
    ("<think>The user approved.</think>\nyes", True),
])
def test_a_reply_that_is_exactly_yes_or_no_is_read(reply, confirmed):
    assert parse_confirm_reply(reply) is confirmed


@pytest.mark.parametrize("reply", ["", "yes, confirmed", "Yes!", "y", "no..", "maybe",
                                   "yes\nno", "<think>yes</think>", "The answer is yes."])
def test_anything_else_is_unparsed(reply):
    assert parse_confirm_reply(reply) is None


def test_the_request_shows_the_rubric_version_the_call_and_the_last_ten_messages():
    rubric = load_confirm_rubric()
    assert (rubric.version, rubric.window) == ("confirm-rubric-v2", 10)
    long_result = Message(role="tool", name="get_reservation_details", content="x" * 1000)
    call_message = Message(role="assistant", tool_calls=[ToolCall(
        name="get_reservation_details", arguments={"reservation_id": "ZFA04Y"})])
    write = WriteContext(call=CANCEL, agent_text=ASKED, user_reply="Yes.", messages=(
        *(Message(role="user", content=f"filler {i}") for i in range(9)), call_message,
        long_result, Message(role="assistant", content="<think>hm</think>" + ASKED),
        Message(role="user", content="Yes.")))
    system, user = rubric.messages(write)
    assert system.role == "system" and system.content.endswith("(rubric confirm-rubric-v2)")
    assert user.role == "user"
    assert 'cancel_reservation {"reservation_id": "ZFA04Y"}' in user.content
    lines = user.content.split("The conversation before it:\n")[1].split("\n\n")[0].splitlines()
    assert len(lines) == 10 and lines[0] == "[user] filler 3"
    assert lines[6] == ('[assistant: tool call] get_reservation_details '
                        '{"reservation_id": "ZFA04Y"}')
    assert lines[7] == f"[tool get_reservation_details] {'x' * rubric.tool_chars} ..."
    assert lines[8:] == [f"[assistant] {ASKED}", "[user] Yes."]
    long_ask = "y" * 1000 + " Shall I proceed?"
    (_, user) = rubric.messages(WriteContext(call=CANCEL, agent_text=long_ask, user_reply="Yes.",
                                             messages=(Message(role="assistant",
                                                               content=long_ask),)))
    shown = user.content.split("The conversation before it:\n")[1].splitlines()[0]
    tail = rubric.max_chars // 3
    assert shown == (f"[assistant] {'y' * (rubric.max_chars - tail)} ... "
                     f"{long_ask[-tail:]}") and shown.endswith("Shall I proceed?")


class JudgeServer(ScriptedServer):
    """Answers `yes` when the last user line says "Yes", `no` for "No", else chatter."""

    def answer(self, body, authorization):
        status, payload = super().answer(body, authorization)
        last = body["messages"][-1]["content"].split("\n\n")[1].splitlines()[-1]
        text = "yes" if "Yes" in last else "no" if "No" in last else "It depends."
        payload["choices"][0]["message"]["content"] = text
        return status, payload


def judge(base_url: str, store, **options) -> JudgeProfile:
    spec = ModelSpec(name="judge", backend="openai", options={
        "base_url": base_url, "model": "judge", "max_tokens": 3, "timeout_s": 30,
        "backoff_s": 0.01, **options})
    return JudgeProfile(StoredBackend(make_backend(spec), ResponseStore(store)),
                        get_profile("default"), batch_size=2)


def test_the_judge_says_yes_no_or_unparsed_and_a_rerun_asks_nothing(tmp_path):
    writes = [context("Yes, go ahead."), context("No."), context("Hmm."),
              context("Yes, go ahead.")]
    with JudgeServer() as server:
        profile = judge(server.base_url, tmp_path / "store")
        found = profile.confirm_verdicts(writes)
        assert [(v.confirmed, v.rule, v.evidence) for v in found] == [
            (True, "judge:confirm:yes", "yes"), (False, "judge:confirm:no", "no"),
            (False, "judge:confirm:unparsed", "It depends."),
            (True, "judge:confirm:yes", "yes")]
        assert len(server.requests) == 3  # the repeated context is asked once
        body = server.requests[0]
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "tools" not in body and body["max_tokens"] == 3
        assert profile.confirm.unparsed == 1
        assert "3 writes judged (confirm-rubric-v2), 1 unparseable" in profile.summary()
        again = judge(server.base_url, tmp_path / "store").confirm_verdicts(writes)
        assert again == found and len(server.requests) == 3  # from the response store


def test_a_failed_judge_request_raises_and_stores_nothing(tmp_path, proxy, scripted):
    proxy.script(["500", "500"])
    profile = judge(f"{proxy.url}/v1", tmp_path / "store", max_retries=1)
    with pytest.raises(JudgeUnavailable, match="failed 1 of 1 confirm requests"):
        profile.confirm_verdicts([context("Yes.")])
    assert profile.confirm.verdicts == {} and len(ResponseStore(tmp_path / "store")) == 0
    assert scripted.requests == []


@pytest.mark.parametrize("name", ["default", "paper"])
def test_rule_profiles_give_the_rule_verdict(name):
    writes = [context("Yes, go ahead."), context("No."),
              context("Yes.", ToolCall(name="cancel_reservation",
                                       arguments={"reservation_id": "OTHER1"}))]
    reader = get_profile("default")  # the rule's reader for every rule profile
    assert get_profile(name).confirm_verdicts(writes) == [rule_verdict(w, reader)  # type: ignore[arg-type]
                                                          for w in writes]
    assert [v.confirmed for v in get_profile(name).confirm_verdicts(writes)] == [
        True, False, False]



def test_tau2_write_units_follow_the_profile_of_the_job(tau2_wheel):
    """The oracle's write on airline_2: the rule confirms it; a judge saying `no` does not, and
    it was shown the conversation up to the user's approval."""
    from tests.support.tau2_episodes import TAU2, Scripted, cases_of, episodes, policy, text

    (case,) = cases_of(tau2_wheel, "airline_2")
    (trajectory,) = episodes(tau2_wheel, [case], policy("oracle"))
    score = TAU2.score(str(tau2_wheel), case, trajectory, None)
    (rule_unit,) = write_units(TAU2, get_profile("default"), case, trajectory, score)
    assert rule_unit["emitted"] == "confirm|tool_call" and rule_unit["bound"] is None
    backend = Scripted(lambda request: text("no"))
    (judged,) = write_units(TAU2, JudgeProfile(backend, get_profile("default")), case, trajectory,
                            score)
    assert judged["emitted"] == "tool_call" and judged["bound"] == "acc_without_gold"
    verdict = {"emitted", "emission_classes", "gold_emitted", "gold_turn_class",
               "gold_turn_hit", "gold_emitted_any_step", "bound", "structural_hit"}
    assert {k: v for k, v in judged.items() if k not in verdict} == {
        k: v for k, v in rule_unit.items() if k not in verdict}
    (request,) = backend.requests
    shown = request.messages[-1].content
    assert shown.rstrip().endswith("Was this write confirmed by the user? yes or no?")
    window = shown.split("The conversation before it:\n")[1].split("\n\n")[0].splitlines()
    assert window[-1].startswith("[user] ") and "[assistant] To confirm: I will call" in \
        window[-2]
