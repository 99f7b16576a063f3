"""The response store: keys, hits and misses, failures never stored, explanations, and
durability when the writing process is killed with SIGKILL."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from contextlib import closing

import pytest

from tests.support.servers import make_request
from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.backends.store import FILE, ResponseStore, StoredBackend, request_key
from toolcalib.records import Emission, Message

TOOL = {"name": "cd", "description": "Change directory.",
        "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}},
                       "required": ["folder"]}}


class EchoBackend:
    """A deterministic backend that answers with the last message and counts its calls;
    requests whose last message contains 'fail' get an InfrastructureError."""

    cacheable = True

    def __init__(self, model: str = "echo-1"):
        self.name = model
        self.model = model
        self.calls = 0

    def identity(self) -> dict:
        return {"backend": "echo", "model": self.model, "sampling": {"temperature": 0}}

    def answer(self, request: Request) -> Answer:
        self.calls += 1
        text = request.messages[-1].content
        if "fail" in text:
            return InfrastructureError("HTTP 503")
        return Emission(text=f"echo: {text}", finish_reason="stop")

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        return [self.answer(request) for request in requests]


class StreamingBackend(EchoBackend):
    """Reports each answer through `on_answer`; dies after `crash_after` answers."""

    def __init__(self, crash_after: int | None = None):
        super().__init__()
        self.crash_after = crash_after

    def generate_batch(self, requests: list[Request],
                       on_answer: Callable[[int, Answer], None] | None = None) -> list[Answer]:
        answers = []
        for index, request in enumerate(requests):
            if index == self.crash_after:
                raise RuntimeError("backend died")
            answers.append(self.answer(request))
            if on_answer is not None:
                on_answer(index, answers[-1])
        return answers


@pytest.fixture
def store(tmp_path):
    store = ResponseStore(tmp_path / "store")
    yield store
    store.close()


def test_second_identical_run_is_answered_from_the_store(store):
    inner = EchoBackend()
    backend = StoredBackend(inner, store)
    requests = [make_request(f"question {i}", tools=[TOOL]) for i in range(3)]
    first = backend.generate_batch(requests)
    assert (inner.calls, backend.misses, backend.hits, len(store)) == (3, 3, 0, 3)
    second = backend.generate_batch(requests)
    assert second == first
    assert (inner.calls, backend.misses, backend.hits) == (3, 3, 3)


def test_key_ignores_case_turn_and_step_but_not_the_request(store):
    backend = StoredBackend(EchoBackend(), store)
    backend.generate_batch([make_request("same", turn=0, step=0)])
    backend.generate_batch([make_request("same", turn=3, step=7)])
    assert (backend.misses, backend.hits) == (1, 1)
    for other in (make_request("other"), make_request("same", tools=[TOOL]),
                  make_request("same", params={"max_tokens": 8})):
        backend.generate_batch([other])
    assert backend.misses == 4


def test_key_is_stable_when_message_fields_take_their_defaults():
    explicit = [Message(role="user", content="x", tool_calls=[], name=None)]
    assert (request_key({}, explicit, [], {}).key
            == request_key({}, [Message(role="user", content="x")], [], {}).key)


def test_failures_are_returned_never_stored_and_retried_next_run(store):
    inner = EchoBackend()
    backend = StoredBackend(inner, store)
    requests = [make_request("ok"), make_request("please fail")]
    answers = backend.generate_batch(requests)
    assert isinstance(answers[0], Emission) and isinstance(answers[1], InfrastructureError)
    assert (len(store), backend.errors) == (1, 1)
    backend.generate_batch(requests)
    assert (inner.calls, backend.hits, backend.errors) == (3, 1, 2)


def test_answers_are_committed_as_they_arrive(tmp_path):
    path = tmp_path / "store"
    backend = StoredBackend(StreamingBackend(crash_after=2), ResponseStore(path))
    with pytest.raises(RuntimeError, match="backend died"):
        backend.generate_batch([make_request(f"q{i}") for i in range(4)])
    reopened = StoredBackend(EchoBackend(), ResponseStore(path))
    assert len(reopened.store) == 2
    reopened.generate_batch([make_request(f"q{i}") for i in range(4)])
    assert (reopened.hits, reopened.misses) == (2, 2)


def test_explain_names_the_differing_component(store):
    StoredBackend(EchoBackend("echo-1"), store).generate_batch(
        [make_request("hello", tools=[TOOL], params={"max_tokens": 8})])
    unrelated = StoredBackend(EchoBackend("echo-3"), store).explain(make_request("new"))
    assert "no stored entry shares any component" in unrelated

    other_model = StoredBackend(EchoBackend("echo-2"), store)
    text = other_model.explain(make_request("hello", tools=[TOOL], params={"max_tokens": 8}))
    assert "same params, tools, messages" in text
    assert 'identity differs (model: stored "echo-1", now "echo-2")' in text

    same_model = StoredBackend(EchoBackend("echo-1"), store)
    text = same_model.explain(make_request("hello", tools=[TOOL], params={"max_tokens": 9}))
    assert "params differ (max_tokens: stored 8, now 9)" in text
    renamed = {**TOOL, "name": "ls"}
    text = same_model.explain(make_request("hello", tools=[renamed], params={"max_tokens": 8}))
    assert "tools differ (added ['ls'], removed ['cd'])" in text
    longer = [Message(role="user", content="hello"), Message(role="assistant", content="hi"),
              Message(role="user", content="more")]
    text = same_model.explain(make_request(longer, tools=[TOOL], params={"max_tokens": 8}))
    assert "messages differ (stored 1, now 3; first 1 equal; one extends the other)" in text
    text = same_model.explain(make_request("bye", tools=[TOOL], params={"max_tokens": 8}))
    assert "first 0 equal; message 0 (user) differs" in text
    stored = make_request("hello", tools=[TOOL], params={"max_tokens": 8})
    assert same_model.explain(stored).startswith("hit:")


WRITER = textwrap.dedent("""
    import sys
    from toolcalib.records import Emission, Message
    from toolcalib.backends.store import ResponseStore, request_key
    store = ResponseStore(sys.argv[1])
    for i in range(100000):
        key = request_key({"model": "m"}, [Message(role="user", content=f"q{i}" * 50)], [], {})
        store.put(key, Emission(text=f"answer {i}" * 20))
        print(i, key.key, flush=True)
""")


def test_sigkill_midway_loses_no_committed_answer(tmp_path):
    path = tmp_path / "store"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                              stdout=subprocess.PIPE, text=True)
    committed = []
    for line in writer.stdout:
        committed.append(line.split())
        if len(committed) == 300:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    committed += [line.split() for line in writer.stdout.read().splitlines()]
    writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL

    with closing(sqlite3.connect(path / FILE)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store = ResponseStore(path)
    assert len(store) >= len(committed)
    for index, key in committed:
        assert store.get(key).text == f"answer {index}" * 20
    extra = request_key({"model": "m"}, [Message(role="user", content="after")], [], {})
    store.put(extra, Emission(text="still writable"))
    assert store.get(extra.key).text == "still writable"
    store.close()


def test_misses_are_explained_when_the_store_had_other_answers(store):
    StoredBackend(EchoBackend("echo-1"), store).generate_batch([make_request("q")])
    rerun = StoredBackend(EchoBackend("echo-2"), store, explain_misses=1)
    rerun.generate_batch([make_request("q"), make_request("r")])
    assert len(rerun.explanations) == 1
    assert "identity differs" in rerun.explanations[0] and "echo-2" in rerun.explanations[0]
