"""The τ² agent-user loop: every termination (user_stop, agent_stop with and without calls,
max_steps, too_many_errors, user_error, agent_error, context_overflow), τ²'s tool errors
recorded, the LLM user's requests (τ²'s guidelines and scenario, the conversation from the
user's side), and end to end with an OpenAI-compatible server as the user (a scripted one,
then SmolLM2 on llama.cpp: slow)."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.scripted_server import ScriptedServer
from tests.support.tau2_episodes import TAU2, Scripted, call, cases_of, episodes, policy, text
from toolcalib.backends.base import ContextOverflow, InfrastructureError, recorded_identity
from toolcalib.benchmarks.tau2.loop import GREETING, Tau2Loop
from toolcalib.benchmarks.tau2.score import STOP_WITH_CALLS
from toolcalib.benchmarks.tau2.user import (
    OUT_OF_SCOPE,
    STOP,
    SYSTEM_PROMPT,
    TRANSFER,
    instructions_text,
)
from toolcalib.classify.profiles import read_alone
from toolcalib.jsonio import InputError
from toolcalib.records import Message
from toolcalib.stages.generate import USER_PROFILE

OPENING = "Hi, I want to cancel my reservation EHGLP3, please."


def _one(wheel, case_id, agent, options=None, user=None):
    (case,) = cases_of(wheel, case_id)
    (trajectory,) = episodes(wheel, [case], agent, options, user)
    return case, trajectory, TAU2.score(str(wheel), case, trajectory, None)


def _said(trajectory, role):
    return [m.content for m in trajectory.messages if m.role == role]


def test_user_stop(tau2_wheel):
    _, trajectory, score = _one(tau2_wheel, "airline_0", policy("oracle"))
    assert (trajectory.outcome, trajectory.termination) == ("completed", "user_stop")
    assert _said(trajectory, "user")[-1] == STOP
    assert [t.user for t in trajectory.turns] == _said(trajectory, "user")[:-1]
    assert trajectory.messages[1] == Message(role="assistant", content=GREETING)
    assert score.scored and score.passed


def test_agent_stop(tau2_wheel):
    agent = Scripted(lambda request: text("Goodbye. ###STOP###"))
    _, trajectory, score = _one(tau2_wheel, "airline_0", agent)
    assert (trajectory.outcome, trajectory.termination) == ("completed", "agent_stop")
    assert len(agent.requests) == 1 and len(trajectory.turns) == 1
    assert trajectory.messages[-1].content == "Goodbye. ###STOP###"
    assert score.scored and score.details["termination"] == "agent_stop"
    (step,) = trajectory.turns[0].steps
    assert (step.results, trajectory.turns[0].ended) == ([], "no_call")


def test_agent_stop_with_calls_runs_none_of_them(tau2_wheel, monkeypatch):
    """τ² checks the stop token before any call runs: the step is recorded (its calls, no
    results), no tool message follows, and τ²'s replay cannot score it (reward 0)."""
    from toolcalib.benchmarks.tau2 import plugin

    def never(self, call):
        raise AssertionError(f"{call.name} executed")

    monkeypatch.setattr(plugin.Session, "execute", never)
    stop = call("cancel_reservation", reservation_id="EHGLP3").replace(text="Done. ###STOP###")
    agent = Scripted(lambda request: stop)
    _, trajectory, score = _one(tau2_wheel, "airline_0", agent)
    assert (trajectory.outcome, trajectory.termination) == ("completed", "agent_stop")
    assert len(agent.requests) == 1
    (turn,) = trajectory.turns
    (step,) = turn.steps
    assert (step.emission.tool_calls, step.results, turn.ended) == (stop.tool_calls, [],
                                                                     "no_call")
    assert [m.role for m in trajectory.messages[-2:]] == ["user", "assistant"]
    assert trajectory.messages[-1].tool_calls == stop.tool_calls
    assert score.scored and not score.passed and score.details["reward"] == 0.0
    assert (score.error_type, score.error_message) == ("tau2:not_evaluated", STOP_WITH_CALLS)


def test_max_steps_counts_every_message(tau2_wheel):
    """τ² counts agent, user and tool-result messages (the greeting included)."""
    asking = Scripted(lambda request: text("Could you please tell me your user id?"))
    _, trajectory, score = _one(tau2_wheel, "airline_0", asking, {"max_steps": 6})
    assert (trajectory.outcome, trajectory.termination) == ("step_cap", "max_steps")
    assert [m.role for m in trajectory.messages[1:]] == ["assistant", "user"] * 3
    assert score.scored and not score.passed and score.details["reward"] == 0.0
    assert score.error_type == "tau2:not_evaluated"
    looking = Scripted(lambda request: call("get_user_details", user_id="emma_kim_9957"))
    _, trajectory, _ = _one(tau2_wheel, "airline_0", looking, {"max_steps": 6})
    assert (trajectory.outcome, trajectory.termination) == ("step_cap", "max_steps")
    assert [m.role for m in trajectory.messages[1:]] == [
        "assistant", "user", "assistant", "tool", "assistant", "tool"]
    assert trajectory.turns[-1].ended == "step_cap"


def test_too_many_errors_records_taus_error(tau2_wheel):
    agent = Scripted(lambda request: call("no_such_tool", x=1))
    _, trajectory, score = _one(tau2_wheel, "airline_0", agent, {"max_errors": 3})
    assert (trajectory.outcome, trajectory.termination) == ("step_cap", "too_many_errors")
    (turn,) = trajectory.turns
    error = "Error: Tool 'no_such_tool' not found."
    assert [step.results for step in turn.steps] == [[error]] * 3
    assert _said(trajectory, "tool") == [error] * 3
    assert score.scored and not score.passed and score.details["reward"] == 0.0


@pytest.mark.parametrize(("arguments", "error"), [
    ({"uid": "x"}, "Error: AirlineTools.get_user_details() got an unexpected keyword argument "
                   "'uid'"),
    ({}, "Error: AirlineTools.get_user_details() missing 1 required positional argument: "
         "'user_id'"),
])
def test_arguments_that_do_not_validate_get_taus_error(tau2_wheel, arguments, error):
    def agent(request):
        if request.step == 0:
            return call("get_user_details", **arguments)
        return text("I could not find your account. ###STOP###")

    _, trajectory, score = _one(tau2_wheel, "airline_0", Scripted(agent))
    assert trajectory.termination == "agent_stop"
    assert trajectory.turns[0].steps[0].results == [error]
    assert score.scored


def _user(*replies):
    """A backend playing the user: each reply in turn (an error is returned as the answer)."""
    queue = list(replies)
    return Scripted(lambda request: text(r) if isinstance(r := queue.pop(0), str) else r,
                    name="sim")


def test_user_error_is_infrastructure(tau2_wheel):
    user = _user(InfrastructureError("simulator down"))
    agent = policy("oracle")
    _, trajectory, score = _one(tau2_wheel, "airline_0", agent, {"user": "sim"}, user)
    assert (trajectory.outcome, trajectory.termination) == ("error", "user_error")
    assert trajectory.error == "user simulator: simulator down"
    assert (score.scored, score.passed, score.error_type) == (False, None, "error")
    assert trajectory.turns == []


@pytest.mark.parametrize(("answer", "outcome", "termination"), [
    (InfrastructureError("server gone"), "error", "agent_error"),
    (ContextOverflow("too long"), "context_overflow", "context_overflow"),
])
def test_agent_failures_are_infrastructure(tau2_wheel, answer, outcome, termination):
    _, trajectory, score = _one(tau2_wheel, "airline_0", Scripted(lambda request: answer))
    assert (trajectory.outcome, trajectory.termination) == (outcome, termination)
    assert trajectory.error == str(answer) and not score.scored


def test_the_llm_user_sees_taus_prompt_and_its_own_side(tau2_release, tau2_wheel):
    replies = [OPENING, "My user id is raj_sanchez_7340.", "Thanks! ###TRANSFER###"]
    user = _user(*replies)
    options = {"user": "sim", "user_params": {"temperature": 0}}
    case, trajectory, score = _one(tau2_wheel, "airline_1", policy("oracle"), options, user)
    assert (trajectory.outcome, trajectory.termination) == ("completed", "user_stop")
    assert trajectory.user_identity == recorded_identity(user.identity())
    assert trajectory.model_identity == {"backend": "policy", "policy": "oracle"}
    system = SYSTEM_PROMPT.format(
        guidelines=tau2_release.guidelines(),
        instructions=instructions_text(case.environment["task"]["user_scenario"]
                                       ["instructions"]))
    assert "Reason for call:" in system and "###STOP###" in system
    agent_texts = [m.content for m in trajectory.messages
                   if m.role == "assistant" and not m.tool_calls]
    assert len(user.requests) == 3 and len(agent_texts) == 3 and agent_texts[0] == GREETING
    for number, request in enumerate(user.requests):
        assert (request.role, request.tools, request.params, request.case) == (
            "user", [], {"temperature": 0}, None)
        assert request.messages[0] == Message(role="system", content=system)
        expected = [("user", agent_texts[0])] + [
            pair for i in range(1, number + 1)
            for pair in (("assistant", replies[i - 1]), ("user", agent_texts[i]))]
        assert [(m.role, m.content) for m in request.messages[1:]] == expected
        assert not any(m.tool_calls for m in request.messages)
    assert _said(trajectory, "user") == replies
    assert [t.user for t in trajectory.turns] == replies[:2]
    assert trajectory.turns[0].steps[0].emission.tool_calls  # the calls stay the agent's
    assert score.scored


@pytest.mark.parametrize("signal", [STOP, TRANSFER, OUT_OF_SCOPE])
def test_every_user_stop_signal_ends_the_episode(tau2_wheel, signal):
    _, trajectory, _ = _one(tau2_wheel, "airline_0", policy("oracle"), {"user": "sim"},
                            _user(OPENING, f"Bye {signal}"))
    assert trajectory.termination == "user_stop"


def test_a_user_option_without_a_user_backend_is_an_error(tau2_wheel):
    with pytest.raises(InputError, match="τ² user 'sim': no backend plays the user"):
        TAU2.loop(Tau2Loop(user="sim"), None, tau2_wheel, read_alone(USER_PROFILE))


# -- slow: an OpenAI-compatible server as the user, through the generate stage ----------------

ORACLE = json.dumps({"name": "oracle", "backend": "policy", "options": {"policy": "oracle"}})
TERMINATIONS = {"user_stop", "agent_stop", "max_steps", "too_many_errors", "user_error",
                "agent_error", "context_overflow"}


class UserServer(ScriptedServer):
    """Answers as a user: the reason for the call first, then `###STOP###`."""

    def answer(self, body, authorization):
        status, payload = super().answer(body, authorization)
        spoke = any(m.get("role") == "assistant" for m in body["messages"])
        payload["choices"][0]["message"]["content"] = STOP if spoke else OPENING
        return status, payload


def _user_spec(base_url: str, model: str, **options) -> str:
    return json.dumps({"name": model, "backend": "openai", "options": {
        "base_url": base_url, "model": model, "timeout_s": 300, "backoff_s": 0.05, **options}})


def _generate(tmp_path, wheel, ids, user_spec, options):
    """The generate stage's trajectories (and their bytes): the oracle as the agent."""
    from toolcalib.jsonio import read_records
    from toolcalib.records import Trajectory
    from toolcalib.stages import generate, normalize

    cases, out = tmp_path / "cases.jsonl", tmp_path / "trajectories.jsonl"
    if not cases.exists():
        normalize.run(benchmark="tau2", category="airline", source=str(wheel), out=str(cases))
    generate.run(ORACLE, "baseline", "tau2", str(cases), str(wheel), str(out),
                 store=str(tmp_path / "store"), case_ids=ids, benchmark_options=options,
                 user_spec=user_spec)
    data = out.read_bytes()
    return read_records(str(out), Trajectory), data


@pytest.mark.slow
def test_a_scripted_server_as_the_user(tau2_release, tau2_wheel, tmp_path, capsys):
    """Runtime: 4 s (2 shared cores)."""
    from toolcalib.backends import make_backend
    from toolcalib.config import parse_model_spec

    ids = ["airline_0", "airline_1"]
    with UserServer() as server:
        spec = _user_spec(server.base_url, "sim", max_tokens=64)
        trajectories, first = _generate(tmp_path, tau2_wheel, ids, spec, {"user": "sim"})
        identity = recorded_identity(make_backend(parse_model_spec(spec)).identity())
        assert [(t.case_id, t.termination, _said(t, "user")) for t in trajectories] == [
            (i, "user_stop", [OPENING, STOP]) for i in ids]
        assert all(t.user_identity == identity for t in trajectories)
        assert identity["base_url"] == server.base_url
        assert len(server.requests) == 4
        for body in server.requests:
            assert body["messages"][0]["role"] == "system"
            assert body["messages"][0]["content"].startswith(tau2_release.guidelines())
            assert body["messages"][1] == {"role": "user", "content": GREETING}
            assert "tools" not in body
        assert "user simulator: 4 model calls, 0 answers from the store" in \
            capsys.readouterr().err
        again, second = _generate(tmp_path, tau2_wheel, ids, spec, {"user": "sim"})
        assert len(server.requests) == 4  # every user turn from the response store
        assert second == first
        assert "user simulator: 0 model calls, 4 answers from the store" in \
            capsys.readouterr().err


@pytest.mark.slow
def test_smollm2_on_llama_cpp_as_the_user(llama_server, tau2_wheel, tmp_path):
    """One task end to end with a real model as the user (whatever it says, the episode
    ends and is recorded). Runtime: 16 s on the 2 shared cores at load 4, the server's start
    not counted (its generation slows down badly on overloaded cores: 6 min at load 7 with
    `max_steps` 12)."""
    started = time.monotonic()
    spec = _user_spec(llama_server.base_url, "smollm2", max_tokens=32, seed=1)
    (trajectory,), _ = _generate(tmp_path, tau2_wheel, ["airline_0"], spec,
                                 {"user": "smollm2", "max_steps": 4})
    assert trajectory.termination in TERMINATIONS, trajectory.termination
    assert trajectory.user_identity["model"] == "smollm2"
    assert trajectory.user_identity["base_url"] == llama_server.base_url
    said = _said(trajectory, "user")
    assert said and all(isinstance(s, str) for s in said)
    assert trajectory.outcome in ("completed", "step_cap", "error", "context_overflow")
    print(f"\nSmolLM2 as the user: {trajectory.termination} after {len(said)} user turns, "
          f"{time.monotonic() - started:.0f} s")
