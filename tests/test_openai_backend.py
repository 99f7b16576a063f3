"""The OpenAI-compatible backend: request conversion; retries, Retry-After, failures,
concurrency, context overflow and the response store in front of it against a scripted server
(tests/support/scripted_server.py) behind a fault-injecting proxy (fast); and against a real
llama.cpp server (SmolLM2-135M, slow): prompt and native mode, context overflow, and the fault path
end to
end."""

from __future__ import annotations

import email.utils
import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support.faultproxy import FaultProxy
from tests.support.scripted_server import ScriptedServer
from tests.support.servers import free_port, make_request
from toolcalib.backends import make_backend
from toolcalib.backends.base import ContextOverflow, InfrastructureError
from toolcalib.backends.openai import (
    OpenAIBackend,
    convert_messages,
    convert_tool,
    parse_choice,
    retry_after,
)
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.config import ModelSpec
from toolcalib.jsonio import InputError
from toolcalib.records import Emission, Message, ToolCall

SECRET = "sk-test-0123456789-do-not-leak"
KEY_ENV = "TOOLCALIB_TEST_API_KEY"
WEATHER = {"name": "weather.get", "description": "Current weather in a city.",
           "parameters": {"type": "object", "required": ["city"], "properties": {
               "city": {"type": "string", "description": "City name."},
               "days": {"type": "number", "description": "Days ahead."},
               "where": {"type": "array", "items": {"type": "number"}},
               "extra": {"type": "string", "description": "Anything."}}},
           "response": {"type": "object", "properties": {"temp": {"type": "number"}}}}
"""A tool as cases carry it: canonical JSON schema (BFCL's docs are converted at normalization)."""
FORCE_WEATHER = {"tool_choice": {"type": "function", "function": {"name": "weather_get"}}}


def backend(base_url: str, **options) -> OpenAIBackend:
    options = {"base_url": base_url, "model": "smollm2", "max_tokens": 8, "seed": 1,
               "tools_mode": "prompt", "timeout_s": 30, "backoff_s": 0.05, **options}
    made = make_backend(ModelSpec(name="smollm2", backend="openai", options=options))
    assert isinstance(made, OpenAIBackend)
    return made


def test_tools_become_openai_functions_unconverted():
    tool = convert_tool(WEATHER)
    assert tool == {"type": "function", "function": {
        "name": "weather_get", "description": "Current weather in a city.",
        "parameters": WEATHER["parameters"]}}
    assert convert_tool({"name": "f"})["function"] == {
        "name": "f", "description": "", "parameters": {"type": "object", "properties": {}}}


def test_messages_get_positional_call_ids_and_string_content():
    call = ToolCall(name="weather.get", arguments={"city": "Oslo"})
    messages = [Message(role="system", content="s"), Message(role="user", content="u0"),
                Message(role="assistant", tool_calls=[call, call]),
                Message(role="tool", name="weather.get", content="r0"),
                Message(role="tool", name="weather.get", content="r1"),
                Message(role="assistant", content="done"), Message(role="user", content="u1"),
                Message(role="assistant", tool_calls=[call]),
                Message(role="tool", name="weather.get", content="r2")]
    native = convert_messages(messages, native=True)
    assert native[2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"call_0_0_{i}", "type": "function",
         "function": {"name": "weather_get", "arguments": '{"city": "Oslo"}'}} for i in (0, 1)]}
    assert [m.get("tool_call_id") for m in native] == [
        None, None, None, "call_0_0_0", "call_0_0_1", None, None, None, "call_1_0_0"]
    assert native[7]["tool_calls"][0]["id"] == "call_1_0_0"
    assert convert_messages(messages, native=True) == native
    assert convert_messages(messages, native=False)[2] == {"role": "assistant", "content": ""}


def test_identity_and_errors_never_hold_the_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    made = backend(f"http://127.0.0.1:{free_port()}/v1", api_key_env=KEY_ENV, max_retries=1,
                   weights_sha256="ab" * 32)
    identity = made.identity()
    assert identity["weights_sha256"] == "ab" * 32 and identity["model"] == "smollm2"
    (answer,) = made.generate_batch([make_request("hi")])
    assert isinstance(answer, InfrastructureError)
    assert "gave up after 2 attempts" in str(answer) and "ConnectError" in str(answer)
    for text in (json.dumps(identity), repr(made), str(answer)):
        assert SECRET not in text


def test_bad_options_and_missing_key_are_named(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(InputError, match=f"{KEY_ENV} .api_key_env. is not set"):
        backend("http://127.0.0.1:1/v1", api_key_env=KEY_ENV)
    with pytest.raises(InputError, match="option 'max_concurency'"):
        backend("http://127.0.0.1:1/v1", max_concurency=2)


def test_prompt_mode_describes_the_tools_in_the_system_prompt():
    made = backend("http://127.0.0.1:9")
    history = [Message(role="user", content="Weather?"),
               Message(role="assistant", tool_calls=[ToolCall(name="weather.get",
                                                              arguments={"city": "Oslo"})]),
               Message(role="tool", name="weather.get", content="12C")]
    body = made.body(make_request("Weather?", tools=[WEATHER]).__class__(
        messages=history, tools=[WEATHER], case=None, turn=0, step=1))
    system, *rest = body["messages"]
    assert system["role"] == "system" and "<tools>" in system["content"]
    assert '"name": "weather.get"' in system["content"] and "tools" not in body
    assert rest[1]["content"].startswith("<tool_call>")
    assert rest[2] == {"role": "user", "content": "<tool_response>\n12C\n</tool_response>"}
    assert made.identity()["prompt_version"]


def test_retry_after_reads_seconds_and_http_dates():
    def header(value: str | None) -> float | None:
        headers = {} if value is None else {"Retry-After": value}
        return retry_after(httpx.Response(429, headers=headers))

    assert header("7") == 7.0 and header("0.5") == 0.5 and header("-3") == 0.0
    ahead = datetime.now(UTC) + timedelta(seconds=30)
    assert 28.0 < header(email.utils.format_datetime(ahead, usegmt=True)) <= 30.0
    assert header("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert header(None) is None and header("soon") is None


# -- fast: a scripted server (no model) behind the fault proxy (conftest: scripted, proxy) --

def test_every_fault_is_retried_until_the_answer(scripted, proxy):
    faults = ["429:0", "500", "503", "stall:1", "reset", "truncate", "short"]
    proxy.script(faults)
    made = backend(f"{proxy.url}/v1", timeout_s=0.5, backoff_s=0.01, max_retries=len(faults))
    start = time.monotonic()
    (answer,) = made.generate_batch([make_request("Name a colour.")])
    elapsed = time.monotonic() - start
    # truncate, short and the last attempt reach the server; the rest never leave the proxy
    assert (proxy.requests, proxy.forwarded, len(scripted.requests)) == (len(faults) + 1, 3, 3)
    ((_, served),) = proxy.exchanges
    assert answer == parse_choice(json.loads(served), {}, structured=False)
    assert isinstance(answer, Emission) and answer.text == "echo: Name a colour."
    assert answer.finish_reason == "stop" and answer.output_tokens == 4
    assert elapsed >= 0.5  # the stalled attempt was given up at the timeout


@pytest.mark.parametrize("fault", ["429:1", "503:1"])
def test_retry_after_is_honoured(proxy, fault):
    proxy.script([fault])
    made = backend(f"{proxy.url}/v1", backoff_s=0.01)
    start = time.monotonic()
    (answer,) = made.generate_batch([make_request("Hi.")])
    elapsed = time.monotonic() - start
    assert isinstance(answer, Emission) and proxy.requests == 2
    assert 1.0 <= elapsed < 3.0  # the backoff alone would wait 0.01 s


def test_backoff_doubles_between_attempts(proxy):
    proxy.script(["500", "500", "500"])
    made = backend(f"{proxy.url}/v1", backoff_s=0.2)
    start = time.monotonic()
    (answer,) = made.generate_batch([make_request("Hi.")])
    elapsed = time.monotonic() - start
    assert isinstance(answer, Emission) and proxy.requests == 4
    assert 0.2 + 0.4 + 0.8 <= elapsed < 4.0


def test_exhausted_retries_are_an_error_that_is_never_stored(scripted, proxy, tmp_path):
    proxy.script(["500", "429:0", "reset"])
    stored = StoredBackend(backend(f"{proxy.url}/v1", max_retries=2),
                           ResponseStore(tmp_path / "store"))
    (answer,) = stored.generate_batch([make_request("Hi.")])
    assert isinstance(answer, InfrastructureError) and not isinstance(answer, ContextOverflow)
    assert "gave up after 3 attempts; last: connection error" in str(answer)
    assert (len(stored.store), stored.errors, proxy.requests) == (0, 1, 3)
    assert scripted.requests == []
    (answer,) = stored.generate_batch([make_request("Hi.")])
    assert isinstance(answer, Emission) and len(stored.store) == 1
    assert answer.text == "echo: Hi." and len(scripted.requests) == 1


def test_the_key_reaches_the_server_and_nothing_else(scripted, proxy, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    path = tmp_path / "store"
    made = backend(f"{proxy.url}/v1", api_key_env=KEY_ENV, max_concurrency=1)
    stored = StoredBackend(made, ResponseStore(path))
    proxy.script(["pass", "echo401"])
    ok, refused = stored.generate_batch([make_request("Hi."), make_request("Hello.")])
    assert isinstance(ok, Emission) and isinstance(refused, InfrastructureError)
    assert proxy.authorization == [f"Bearer {SECRET}"] * 2  # a 401 is not retried
    assert scripted.authorization == [f"Bearer {SECRET}"]
    assert "HTTP 401" in str(refused) and "Bearer ***" in str(refused)
    assert SECRET not in str(refused) and SECRET not in json.dumps(stored.identity())
    stored.store.close()
    assert not any(SECRET.encode() in p.read_bytes() for p in path.iterdir())


def test_store_makes_the_second_identical_run_free(scripted, proxy, tmp_path):
    requests = [make_request(f"Count to {n}.") for n in range(3)]
    path = tmp_path / "store"
    first = StoredBackend(backend(f"{proxy.url}/v1"), ResponseStore(path))
    answers = first.generate_batch(requests)
    assert proxy.requests == 3 and len(first.store) == 3 and len(scripted.requests) == 3
    assert [a.text for a in answers] == [f"echo: Count to {n}." for n in range(3)]
    second = StoredBackend(backend(f"{proxy.url}/v1"), ResponseStore(path))
    assert second.generate_batch(requests) == answers
    assert (proxy.requests, second.hits, second.misses) == (3, 3, 0)
    assert len(scripted.requests) == 3


def test_concurrency_is_bounded_and_answers_keep_request_order(proxy):
    words = ["red", "blue", "green", "tea"]
    # The first request to reach the proxy waits 1 s, the second 0.1 s: whichever of the
    # first two arrives second completes first (arrival order is up to the scheduler).
    proxy.script(["delay:1", "delay:0.1", "pass", "pass"])
    order = []
    made = backend(f"{proxy.url}/v1", max_concurrency=2)
    answers = made.generate_batch([make_request(f"Say the word {word}.") for word in words],
                                  on_answer=lambda i, _: order.append(i))
    assert proxy.max_in_flight == 2
    assert order != [0, 1, 2, 3] and sorted(order) == [0, 1, 2, 3]
    served = {json.loads(sent)["messages"][-1]["content"]: parse_choice(json.loads(got), {}, False)
              for sent, got in proxy.exchanges}
    assert answers == [served[f"Say the word {word}."] for word in words]
    assert [a.text for a in answers] == [f"echo: Say the word {word}." for word in words]


def test_context_overflow_is_reported_and_not_retried():
    with ScriptedServer(max_prompt_chars=1000) as server:
        made = backend(server.base_url, max_retries=3)
        short, long = made.generate_batch([make_request("hello"),
                                           make_request("hello " * 5000)])
        assert isinstance(short, Emission) and isinstance(long, ContextOverflow), long
        assert "context exceeded (HTTP 400)" in str(long)
        assert len(server.requests) == 2


# -- slow: a real llama.cpp server ---------------------------------------------------------

@pytest.fixture
def real_proxy(llama_server):
    with FaultProxy(llama_server.url) as proxy:
        yield proxy


@pytest.mark.slow
def test_prompt_mode_returns_the_raw_emission(llama_server):
    made = backend(llama_server.base_url)
    (answer,) = made.generate_batch([make_request("Say hello.", tools=[WEATHER])])
    assert isinstance(answer, Emission)
    assert answer.text and not answer.structured and not answer.tool_calls
    assert answer.finish_reason in ("stop", "length")
    assert answer.input_tokens > 5 and 0 < answer.output_tokens <= 8


@pytest.mark.slow
def test_native_mode_sends_calls_back_and_reads_tool_calls(llama_fc_server):
    tool = {"name": "weather.get", "description": "Current weather in a city.",
            "parameters": {"type": "object", "required": ["city"], "properties": {
                "city": {"type": "string"}, "days": {"type": "number"}}}}
    # canonical JSON schema, as every case carries it (BFCL's types converted at normalization)
    history = [Message(role="user", content="Weather in Paris?"),
               Message(role="assistant",
                       tool_calls=[ToolCall(name="weather.get", arguments={"city": "Paris"})]),
               Message(role="tool", name="weather.get", content='{"temp": 21}'),
               Message(role="user", content="And in Rome?")]
    made = backend(llama_fc_server.base_url, tools_mode="native", max_tokens=32)
    (answer,) = made.generate_batch([make_request(history, [tool], FORCE_WEATHER)])
    assert isinstance(answer, Emission) and answer.structured, answer
    assert answer.finish_reason == "tool_calls" and answer.parse == "none"
    assert [call.name for call in answer.tool_calls] == ["weather.get"]
    assert isinstance(answer.tool_calls[0].arguments.get("city"), str)


@pytest.mark.slow
def test_context_overflow_is_reported_as_such(llama_server):
    made = backend(llama_server.base_url, max_retries=3)
    (answer,) = made.generate_batch([make_request("hello " * 5000)])
    assert isinstance(answer, ContextOverflow), answer


@pytest.mark.slow
def test_every_fault_is_retried_until_the_real_answer(real_proxy):
    """The fault path end to end, once, against the real server (the timeout well above its
    answer time on a loaded 2-core machine, the stall above the timeout)."""
    proxy = real_proxy
    faults = ["429:0", "500", "stall:12", "reset", "truncate", "short"]
    proxy.script(faults)
    made = backend(f"{proxy.url}/v1", timeout_s=10, max_retries=len(faults))
    (answer,) = made.generate_batch([make_request("Name a colour.")])
    assert isinstance(answer, Emission), answer
    assert (proxy.requests, proxy.forwarded) == (len(faults) + 1, 3)
    ((_, served),) = proxy.exchanges
    assert answer == parse_choice(json.loads(served), {}, structured=False)
