"""The `judge` profile: the strict reply parser, the rubric, what the rules decide without the
judge, and a real model (SmolLM2-135M, transformers) judging corpus rows through the response
store: a rerun makes no judge call, and a failed judge request is never a label."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.backends.store import ResponseStore, StoredBackend
from toolcalib.classify.base import NO_CONTEXT
from toolcalib.classify.choose import choose_profile
from toolcalib.classify.judge import (
    JUDGED,
    JudgeProfile,
    JudgeUnavailable,
    load_rubric,
    parse_reply,
)
from toolcalib.classify.profiles import get_profile
from toolcalib.classify.validation import load_corpus
from toolcalib.jsonio import InputError, write_jsonl
from toolcalib.records import ACTION_CLASSES, Emission, ToolCall

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "classifier_corpus.jsonl"


@pytest.mark.parametrize(("reply", "label"), [
    ("ask", "ask"), ("Refuse", "refuse"), (" confirm.\n", "confirm"), ("OTHER", "other"),
    ("<think>It asks for a file name.</think>\nask", "ask"),
])
def test_a_reply_that_is_exactly_one_class_is_read(reply, label):
    assert parse_reply(reply) == label


@pytest.mark.parametrize("reply", [
    "", "ask or refuse", "The class is ask.", "asking", "ask!", "ask..", "tool_call", "malformed",
    "Class: other", "ask\nrefuse", "<think>ask</think>",
])
def test_anything_else_is_unparseable(reply):
    assert parse_reply(reply) is None


def test_rubric_is_versioned_and_shows_every_judged_class():
    rubric = load_rubric()
    assert rubric.version == "judge-rubric-v1"
    assert {example.label for example in rubric.examples} == set(JUDGED)
    messages = rubric.messages("Which {folder}?")
    assert [m.role for m in messages] == ["system", *["user", "assistant"] * len(
        rubric.examples), "user"]
    assert "Which {folder}?" in messages[-1].content
    assert [m.content for m in messages[2:-1:2]] == [e.label for e in rubric.examples]


class Scripted:
    """A stand-in judge backend (unit tests only): replies from a table, records requests."""

    name = "scripted"
    cacheable = True

    def __init__(self, replies: dict[str, Answer]):
        self.replies = replies
        self.batches: list[list[str]] = []

    def identity(self) -> dict[str, str]:
        return {"backend": "scripted"}

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        texts = [r.messages[-1].content.split("<<<\n")[1].split("\n>>>")[0] for r in requests]
        self.batches.append(texts)
        return [self.replies[text] for text in texts]


def test_rules_decide_calls_and_wordless_text_without_the_judge():
    backend = Scripted({})
    judge = JudgeProfile(backend, get_profile("default"))
    structured = Emission(text="Sure", tool_calls=[ToolCall(name="ls")], structured=True,
                          parse="ok")
    parsed = Emission(text='<tool_call>{"name": "ls"}</tool_call>',
                      tool_calls=[ToolCall(name="ls")], parse="ok")
    malformed = Emission(text="<tool_call>{oops", parse="malformed")
    shape = Emission(text='Calling {"name": "ls", "arguments": {}} now.')
    actions = [judge.classify(e, NO_CONTEXT) for e in (structured, parsed, malformed, shape,
                                           Emission(text=""), Emission(text="<think>hm</think>"))]
    assert [a.action for a in actions] == ["tool_call", "tool_call", "malformed", "malformed",
                                           None, "other"]
    assert all(not a.rule.startswith("judge") for a in actions)
    assert backend.batches == []


def test_texts_are_judged_once_in_batches_and_unparseable_replies_are_counted():
    backend = Scripted({"Which file?": Emission(text="ask"),
                        "I can't do that.": Emission(text=" refuse\n"),
                        "Done.": Emission(text="It is a completion report.")})
    judge = JudgeProfile(backend, get_profile("default"), batch_size=2)
    emissions = [Emission(text=t) for t in
                 ("Which file?", "<think>x</think>Which file?", "I can't do that.", "Done.")]
    judge.prepare(emissions)
    assert backend.batches == [["Which file?", "I can't do that."], ["Done."]]
    actions = [judge.classify(e, NO_CONTEXT) for e in emissions]
    assert [(a.action, a.rule) for a in actions] == [
        ("ask", "judge:ask"), ("ask", "judge:ask"), ("refuse", "judge:refuse"),
        ("other", "judge:other:unparsed")]
    assert actions[3].evidence == "It is a completion report."
    assert judge.unparsed == 1 and len(backend.batches) == 2


def test_a_failed_judge_request_is_an_error_not_a_label():
    backend = Scripted({"Which file?": Emission(text="ask"),
                        "Done.": InfrastructureError("server down")})
    judge = JudgeProfile(backend, get_profile("default"), batch_size=4)
    with pytest.raises(JudgeUnavailable, match="failed 1 of 2 requests.*server down"):
        judge.prepare([Emission(text="Which file?"), Emission(text="Done.")])
    assert judge.verdicts == {}


def test_the_judge_profile_needs_a_model_and_a_store():
    with pytest.raises(InputError, match="needs a judge model"):
        choose_profile("judge")
    assert choose_profile("default").name == "default"


def _spec(model_dir: Path, **options) -> str:
    import json
    return json.dumps({"name": "smollm2-135m", "backend": "transformers", "batch_size": 4,
                       "options": {"model_dir": str(model_dir), "tools_mode": "prompt",
                                   "max_new_tokens": 4, "dtype": "float32", **options}})


def _rows(n_text: int):
    rows = load_corpus(CORPUS)
    calls = [r for r in rows if r.parse == "ok"][:2]
    texts = [r for r in rows if r.parse == "none" and r.label in JUDGED]
    return calls + texts[:: max(len(texts) // n_text, 1)][:n_text]


@pytest.mark.slow
def test_a_real_judge_labels_corpus_rows_and_a_rerun_is_served_by_the_store(smollm2_dir,
                                                                             tmp_path):
    rows = _rows(3)
    emissions = [row.emission() for row in rows]
    first = choose_profile("judge", _spec(smollm2_dir), str(tmp_path / "store"))
    first.prepare(emissions)
    labels = [first.classify(e, NO_CONTEXT) for e in emissions]
    assert [a.action for a in labels[:2]] == ["tool_call", "tool_call"]
    judged = labels[2:]
    assert all(a.action in ACTION_CLASSES and a.rule.startswith("judge:") for a in judged)
    assert first.backend.misses == 3 and first.backend.hits == 0
    assert len(first.backend.store) == 3

    # a new run: a fresh store connection (the loaded model is reused only to save time)
    again = JudgeProfile(StoredBackend(first.backend.inner, ResponseStore(tmp_path / "store")),
                         get_profile("default"))
    again.prepare(emissions)
    assert [again.classify(e, NO_CONTEXT) for e in emissions] == labels
    assert again.backend.misses == 0 and again.backend.hits == 3


@pytest.mark.slow
def test_a_real_judge_failure_is_not_recorded(smollm2_dir, tmp_path):
    """A context window that fits the rubric and a short text but not a long one: the real
    backend reports ContextOverflow (infrastructure) for the long one."""
    judge = choose_profile("judge", _spec(smollm2_dir, context_window=700),
                           str(tmp_path / "store"))
    short, long = Emission(text="Which file?"), Emission(text="Please wait. " * 200)
    with pytest.raises(JudgeUnavailable, match="failed 1 of 2 requests.*context window"):
        judge.prepare([short, long])
    assert judge.verdicts == {}
    assert len(judge.backend.store) == 1  # the short one's answer, kept for the rerun


@pytest.mark.slow
def test_validation_table_has_a_judge_block(smollm2_dir, tmp_path):
    from toolcalib.stages.validate import run

    corpus = tmp_path / "corpus.jsonl"
    write_jsonl(corpus, _rows(2))
    run(str(corpus), ["paper", "default", "judge"], str(tmp_path / "out"),
        judge_spec=_spec(smollm2_dir), store=str(tmp_path / "store"))
    summary = pl.read_csv(tmp_path / "out" / "classifier_summary.csv").filter(source="all")
    assert summary["profile"].to_list() == ["paper", "default", "judge"]
    assert summary["n"].to_list() == [4, 4, 4]
    table = pl.read_csv(tmp_path / "out" / "classifier_validation.csv")
    assert set(table["profile"]) == {"paper", "default", "judge"}
    assert "judge P / R / F1 / kappa" in (tmp_path / "out" / "classifier_validation.md").read_text()
