"""Confirm verdicts against the hand-labelled write contexts (tests/data/confirm_corpus.jsonl):
the metrics by hand, the corpus itself (size, sources, mix), and the rule verdict's figures on
it, which must equal those docs/validation.md states (a change to the rule that moves them
fails here until the document says so); the same for each stored judge run
(tests/data/confirm_judge_*.json: its replies replayed through `ConfirmJudge`, overall and per
source kind, beside the rule on the same rows; a changed rubric or request fails here)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from tests.confirm import handwritten, verdicts
from toolcalib.classify import confirm_validation as cv
from toolcalib.classify.confirm import ConfirmVerdict
from toolcalib.classify.confirm_judge import load_confirm_rubric
from toolcalib.classify.profiles import get_profile
from toolcalib.jsonio import InputError
from toolcalib.writes import exchange_texts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "confirm_corpus.jsonl"
DOC = ROOT / "docs" / "validation.md"
LABELS = ROOT / "tests" / "confirm" / "published_labels.jsonl"
SECTION = "## Confirm verdicts on τ²'s writes"


def row(number: int, confirmed: bool) -> cv.ConfirmRow:
    return cv.ConfirmRow(id=f"r{number}", source=cv.Source(kind="handwritten"), messages=[],
                         call={"name": "cancel_reservation"}, agent_text=None,
                         user_reply=None, confirmed=confirmed, reason="by hand")


def test_scores_by_hand():
    rows = [row(1, True), row(2, True), row(3, False), row(4, False)]
    said = [ConfirmVerdict(c, r, "") for c, r in (
        (True, "judge:confirm:yes"), (False, "judge:confirm:unparsed"),
        (False, "judge:confirm:no"), (True, "judge:confirm:yes"))]
    scores = cv.confirm_scores(rows, said)
    assert scores == {"n": 4, "accuracy": 0.5, "kappa": 0.0, "tp": 1, "fp": 1, "fn": 1,
                      "tn": 1, "unparsed": 1}
    perfect = cv.confirm_scores(rows, [ConfirmVerdict(r.confirmed, "x", "") for r in rows])
    assert (perfect["accuracy"], perfect["kappa"]) == (1.0, 1.0)


def test_bad_rows_name_their_line(tmp_path):
    good = json.loads(CORPUS.read_text("utf-8").splitlines()[0])
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({**good, "messages": good["messages"] * 11}) + "\n")
    with pytest.raises(InputError, match=r"corpus.jsonl:1: field 'messages': Expected `array` "
                                         r"of length <= 10 \(in ConfirmRow\)"):
        cv.load_confirm_corpus(path)
    path.write_text(json.dumps({**good, "confirmed": None}) + "\n")
    with pytest.raises(InputError, match="corpus.jsonl:1"):
        cv.load_confirm_corpus(path)


def test_a_rows_exchange_reaches_the_rule():
    good = row(1, True)
    assert good.exchange == [] and good.context().exchange == ()
    listed = msgspec.structs.replace(good, exchange=["Reservation ZFA04Y: JFK-LAX."],
                                     agent_text="Shall I cancel it?", user_reply="Yes.",
                                     call={"name": "cancel_reservation",
                                           "arguments": {"reservation_id": "ZFA04Y"}})
    assert listed.context().exchange == ("Reservation ZFA04Y: JFK-LAX.",)
    assert cv.verdicts([listed], get_profile("default"))[0].rule == "default:confirm:ok"
    bare = msgspec.structs.replace(listed, exchange=[])
    assert cv.verdicts([bare], get_profile("default"))[0].rule == \
        "default:confirm:details_missing"


def test_each_rows_exchange_ends_with_what_its_own_messages_show():
    """The stored exchange comes from the whole conversation; the row's last 10 messages show
    its tail (all of it where they reach back to the previous write or the start)."""
    for item in cv.load_confirm_corpus(CORPUS):
        shown = list(exchange_texts(item.context().messages, handwritten.WRITES)) \
            if item.agent_text else []
        assert item.exchange[len(item.exchange) - len(shown):] == shown, item.id
        if len(item.messages) < cv.WINDOW:
            assert item.exchange == shown, item.id


def test_the_handwritten_write_tools_are_the_releases(tau2_wheel):
    from toolcalib.benchmarks import get_benchmark

    tau2 = get_benchmark("tau2")
    assert handwritten.WRITES == {
        name for domain in ("airline", "retail") for case in tau2.load_cases(tau2_wheel, domain)
        for name in case.environment.get("write_tools") or ()}


def test_the_corpus_mixes_reference_real_and_handwritten_contexts():
    rows = cv.load_confirm_corpus(CORPUS)
    assert len(rows) >= 150
    kinds = Counter(r.source.kind for r in rows)
    assert kinds["reference"] >= 60 and kinds["real"] >= 30 and kinds["handwritten"] >= 60
    real = [r for r in rows if r.source.kind == "real"]
    assert all(r.source.user not in (None, "reference") for r in real)  # an LLM user
    labels = Counter(r.confirmed for r in rows)
    assert min(labels.values()) >= 0.35 * len(rows), labels
    assert all(r.reason.strip() for r in rows)
    assert {r.call["name"] for r in rows} >= {
        "cancel_pending_order", "return_delivered_order_items", "exchange_delivered_order_items",
        "modify_pending_order_items", "modify_pending_order_address", "cancel_reservation",
        "book_reservation", "update_reservation_flights", "update_reservation_baggages"}


def test_the_rule_verdict_on_the_corpus_is_what_the_document_says():
    (summary,) = cv.confirm_validation(CORPUS, [get_profile("default")])
    line = cv.render_markdown([summary]).splitlines()[2]
    text = DOC.read_text("utf-8")
    assert SECTION in text
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert line in section.splitlines(), (line, section)


def rule_lines(rows: list[cv.ConfirmRow]) -> list[str]:
    """The rule's table lines per source: each kind, the corpus before the published rows, and
    each published results file."""
    parts = {f"default, {kind}": [r for r in rows if r.source.kind == kind]
             for kind in ("reference", "real", "handwritten", "published")}
    parts["default, reference + real + handwritten"] = [
        r for r in rows if r.source.kind != "published"]
    for file in sorted({r.source.file for r in rows if r.source.kind == "published"}):
        parts[f"default, published `{file.split('/')[0]}` {_domain(file)}"] = [
            r for r in rows if r.source.file == file]
    rule = get_profile("default")
    summary = [{"profile": name, **cv.confirm_scores(part, cv.verdicts(part, rule))}
               for name, part in parts.items()]
    return cv.render_markdown(summary).splitlines()[2:]


def _domain(file: str) -> str:
    return "retail" if "_retail_" in file else "airline"


def test_the_rule_verdict_per_source_is_what_the_document_says():
    rows = cv.load_confirm_corpus(CORPUS)
    section = DOC.read_text("utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    missing = [line for line in rule_lines(rows) if line not in section.splitlines()]
    assert not missing, missing


def test_the_published_rows_are_a_sample_of_every_results_file():
    rows = [r for r in cv.load_confirm_corpus(CORPUS) if r.source.kind == "published"]
    labels = [json.loads(line) for line in LABELS.read_text("utf-8").splitlines()]
    assert [(r.id, r.confirmed, r.reason) for r in rows] == [
        (label["id"], label["confirmed"], label["reason"]) for label in labels]
    files = Counter(r.source.file for r in rows)
    assert len(files) == 4 and max(files.values()) <= 55 and len(rows) >= 150, files
    for row in rows:
        source = row.source
        assert row.id == f"published/{source.model}/{source.case_id}#write{source.write}"
        assert source.file.startswith(f"{source.model}/") and source.turn is not None
        assert source.agent and source.user


JUDGES = sorted((ROOT / "tests" / "data").glob("confirm_judge_*.json"))


def test_a_judge_run_is_stored():
    assert JUDGES, "no stored judge verdicts (tests/data/confirm_judge_*.json)"


@pytest.mark.parametrize("path", JUDGES, ids=lambda p: p.stem)
def test_a_judges_verdicts_on_the_corpus_are_what_the_document_says(path):
    data = verdicts.load(path)
    lines = verdicts.doc_lines(cv.load_confirm_corpus(CORPUS), data)
    section = DOC.read_text("utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    missing = [line for line in lines if line not in section.splitlines()]
    assert not missing, missing
    assert data["label"] in section


def test_stored_replies_go_through_the_judges_parser_and_must_match_the_request(tmp_path):
    rows = cv.load_confirm_corpus(CORPUS)[:3]
    rubric = load_confirm_rubric()
    data = {"label": "x", "rubric": rubric.version, "verdicts": [
        {"id": row.id, "request_sha256": verdicts.request_sha256(rubric.messages(row.context())),
         "reply": reply} for row, reply in zip(rows, ["Yes.", "no", "Yes, the"], strict=True)]}
    held, judge = verdicts.judged(rows, data)
    said = judge.judge([row.context() for row in held])
    assert [(v.confirmed, v.rule) for v in said] == [
        (True, "judge:confirm:yes"), (False, "judge:confirm:no"),
        (False, "judge:confirm:unparsed")]
    data["verdicts"][1]["request_sha256"] = "0" * 64
    with pytest.raises(ValueError, match=rows[1].id):
        verdicts.judged(rows, data)
    with pytest.raises(ValueError, match="rubric"):
        verdicts.judged(rows, {**data, "rubric": "confirm-rubric-v1"})
    path = tmp_path / "confirm_judge_x.json"
    verdicts.write(path, {"label": "x", "rubric": rubric.version}, data["verdicts"])
    assert verdicts.load(path) == data
