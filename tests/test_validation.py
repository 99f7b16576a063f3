"""Validation metrics against hand-computed values, the corpus itself, and default vs paper."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from toolcalib.classify import Context, EmissionAction, Profile
from toolcalib.classify.validation import (
    NO_CLASS,
    class_scores,
    cohen_kappa,
    load_corpus,
    predictions_frame,
    render_markdown,
    source_groups,
    summary_scores,
    validation_scores,
)
from toolcalib.jsonio import InputError
from toolcalib.metrics.validation import SUMMARY, VALIDATION, validation_frames
from toolcalib.records import RECORDED_CLASSES

CORPUS = Path(__file__).parent / "data" / "classifier_corpus.jsonl"
REAL_ROWS = 400
"""Real-model emissions in the corpus at least (rows with `source: model`)."""


class EchoProfile(Profile):
    """Predicts the class written after `p:` in the text."""

    name = "echo"

    def classify_text(self, text: str, context: Context) -> EmissionAction:
        return EmissionAction(action=text.removeprefix("p:"), rule="echo")


def frames(corpus: Path, profiles: Sequence[str | Profile],
           sources: Sequence[str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two tables as the validate stage writes them."""
    return validation_frames(*validation_scores(corpus, profiles, sources))


def row(id_: str, text: str, gold: str, **extra: object) -> dict[str, object]:
    base = {"id": id_, "text": text, "structured_calls": False, "parse": "none", "label": gold,
            "reason": "r", "source": "hand"}
    return {**base, **extra}


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


PROVENANCE = {"model": "m", "variant": "sri", "benchmark": "bfcl", "category": "irrelevance",
              "case": "irrelevance_3", "turn": 0, "step": 1}
MODEL_ID = "model-m-sri-irrelevance-irrelevance_3-t0-s1"


# gold ask ask ask refuse refuse other / predicted ask ask refuse refuse other other:
#   ask     TP 2, predicted 2, support 3: P 1,   R 2/3, F1 = 2(2/3)/(5/3) = 0.8
#   refuse  TP 1, predicted 2, support 2: P 1/2, R 1/2, F1 1/2
#   other   TP 1, predicted 2, support 1: P 1/2, R 1,   F1 = 1/(3/2) = 2/3
#   accuracy 4/6; macro-F1 (0.8 + 0.5 + 2/3) / 3 = 59/90
#   kappa: p_o = 2/3, p_e = (3*2 + 2*2 + 1*2) / 36 = 1/3, kappa = (1/3) / (2/3) = 1/2
#   per class, the class against the rest:
#   ask     p_o 5/6, p_e (3*2 + 3*4) / 36 = 1/2,   kappa (1/3) / (1/2) = 2/3
#   refuse  p_o 4/6, p_e (2*2 + 4*4) / 36 = 5/9,   kappa (1/9) / (4/9) = 1/4
#   other   p_o 5/6, p_e (1*2 + 5*4) / 36 = 11/18, kappa (4/18) / (7/18) = 4/7
GOLD = ["ask", "ask", "ask", "refuse", "refuse", "other"]
PREDICTED = ["ask", "ask", "refuse", "refuse", "other", "other"]


def test_class_scores_by_hand() -> None:
    scores = {s["class"]: s for s in class_scores(GOLD, PREDICTED)}
    assert [s for s in scores] == list(RECORDED_CLASSES)
    assert scores["ask"] == pytest.approx(
        {"class": "ask", "precision": 1.0, "recall": 2 / 3, "f1": 0.8, "kappa": 2 / 3,
         "support": 3}
    )
    assert scores["refuse"] == pytest.approx(
        {"class": "refuse", "precision": 0.5, "recall": 0.5, "f1": 0.5, "kappa": 1 / 4,
         "support": 2}
    )
    assert scores["other"] == pytest.approx(
        {"class": "other", "precision": 0.5, "recall": 1.0, "f1": 2 / 3, "kappa": 4 / 7,
         "support": 1}
    )
    for absent in ("tool_call", "malformed", "confirm"):
        assert scores[absent] == {"class": absent, "precision": None, "recall": None, "f1": None,
                                  "kappa": None, "support": 0}


def test_summary_by_hand() -> None:
    assert summary_scores(GOLD, PREDICTED) == pytest.approx(
        {"n": 6, "accuracy": 4 / 6, "macro_f1": 59 / 90, "kappa": 0.5}
    )


def test_no_class_prediction_counts_as_wrong() -> None:
    # gold ask other / predicted none other: p_o 1/2, p_e = (0 + 1*1)/4 = 1/4, kappa = 1/3;
    # ask: support 1, nothing predicted: P 0, R 0, F1 0; other: F1 1; macro 1/2.
    gold, predicted = ["ask", "other"], [NO_CLASS, "other"]
    assert cohen_kappa(gold, predicted) == pytest.approx(1 / 3)
    assert summary_scores(gold, predicted)["macro_f1"] == pytest.approx(0.5)
    scores = {s["class"]: s for s in class_scores(gold, predicted)}
    assert (scores["ask"]["precision"], scores["ask"]["recall"], scores["ask"]["f1"]) == (0, 0, 0)


def test_kappa_edge_cases() -> None:
    assert cohen_kappa(["ask", "ask"], ["ask", "ask"]) is None  # chance agreement 1
    assert cohen_kappa(["ask", "refuse"], ["ask", "refuse"]) == 1.0
    assert cohen_kappa(["ask", "refuse"], ["refuse", "ask"]) == -1.0
    with pytest.raises(ValueError):
        cohen_kappa([], [])
    with pytest.raises(ValueError):
        class_scores(["ask"], [])


def test_precision_of_a_class_with_no_gold_rows() -> None:
    scores = {s["class"]: s for s in class_scores(["ask"], ["confirm"])}
    assert scores["confirm"] == {"class": "confirm", "precision": 0.0, "recall": 0.0, "f1": 0.0,
                                 "kappa": 0.0, "support": 0}


def test_validation_table_on_a_tiny_corpus(tmp_path: Path) -> None:
    rows = [row(f"r{i}", f"p:{p}", g) for i, (g, p) in enumerate(zip(GOLD, PREDICTED, strict=True))]
    rows.append(row("call", "p:other", "tool_call", structured_calls=True, parse="ok"))
    corpus = write(tmp_path / "c.jsonl", rows)
    table, summary = frames(corpus, [EchoProfile()])
    assert table.schema == VALIDATION.schema() and summary.schema == SUMMARY.schema()
    assert table.height == 2 * len(RECORDED_CLASSES)  # source groups all and hand
    assert table["source"].unique(maintain_order=True).to_list() == ["all", "hand"]
    got = {r["class"]: r for r in table.filter(source="all").iter_rows(named=True)}
    assert got["tool_call"] == {"schema_version": 2, "profile": "echo", "source": "all",
                                "class": "tool_call", "precision": 1.0, "recall": 1.0, "f1": 1.0,
                                "kappa": 1.0, "support": 1}
    assert got["ask"]["f1"] == pytest.approx(0.8) and got["ask"]["support"] == 3
    # kappa with the structured row: p_o 5/7, p_e = (3*2 + 2*2 + 1*2 + 1*1) / 49 = 13/49
    every, hand = summary.iter_rows(named=True)
    assert every == pytest.approx({"schema_version": 2, "profile": "echo", "source": "all",
                                   "n": 7, "accuracy": 5 / 7,
                                   "macro_f1": (0.8 + 0.5 + 2 / 3 + 1) / 4,
                                   "kappa": (5 / 7 - 13 / 49) / (1 - 13 / 49)})
    assert hand == {**every, "source": "hand"}


def test_validation_per_source(tmp_path: Path) -> None:
    """Each source apart, all together, and the earlier sources together beside a later one."""
    model_row = row(MODEL_ID, "p:ask", "ask", source="model", provenance=PROVENANCE)
    corpus = write(tmp_path / "c.jsonl", [row("h", "p:ask", "ask"), model_row])
    assert source_groups(["model", "hand", "hand"]) == {
        "all": ["hand", "model"], "hand": ["hand"], "model": ["model"]}
    assert source_groups(["published", "model", "hand"])["hand+model"] == ["hand", "model"]
    assert list(source_groups(["published", "hand"])) == ["all", "hand", "published"]
    draws = ["published-heldout-2", "published", "published-heldout"]
    assert source_groups(draws)["published-heldout-all"] == [
        "published-heldout", "published-heldout-2"]
    assert "published-heldout-all" not in source_groups(["published", "published-heldout"])
    table, summary = frames(corpus, [EchoProfile()])
    assert summary["source"].to_list() == ["all", "hand", "model"]
    assert summary["n"].to_list() == [2, 1, 1]
    assert table.filter(source="model", **{"class": "ask"})["support"].to_list() == [1]


def test_published_rows_are_a_source_of_their_own(tmp_path: Path) -> None:
    published = row("run:0:3", "p:refuse", "refuse", source="published")
    model_row = row(MODEL_ID, "p:ask", "ask", source="model", provenance=PROVENANCE)
    corpus = write(tmp_path / "c.jsonl", [row("h", "p:ask", "ask"), model_row, published])
    assert [r.source for r in load_corpus(corpus)] == ["hand", "model", "published"]
    table, summary = frames(corpus, [EchoProfile()])
    assert summary["source"].to_list() == ["all", "hand", "model", "published", "hand+model"]
    assert summary["n"].to_list() == [3, 1, 1, 1, 2]
    with pytest.raises(InputError, match="provenance: required"):
        load_corpus(write(tmp_path / "p.jsonl", [{**published, "provenance": PROVENANCE}]))


def test_the_bfcl_held_out_draw_is_scored_per_panel_model(tmp_path: Path) -> None:
    corpus = write(tmp_path / "c.jsonl", [
        row("gpt-x:irrelevance_1", "p:refuse", "refuse", source="bfcl-heldout"),
        row("gpt-x:irrelevance_2", "p:ask", "refuse", source="bfcl-heldout"),
        row("phi-y:irrelevance_1", "p:other", "other", source="bfcl-heldout")])
    _, summary = frames(corpus, [EchoProfile()])
    assert summary["source"].to_list() == ["all", "bfcl-heldout", "bfcl-heldout:gpt-x",
                                           "bfcl-heldout:phi-y"]
    assert summary["accuracy"].to_list() == [2 / 3, 2 / 3, 0.5, 1.0]


def test_validation_of_chosen_sources(tmp_path: Path) -> None:
    """`sources` scores only those rows (a judge paid per request, on the held-out draw alone);
    a source the corpus lacks stops with the corpus named."""
    held = row("run:1:4", "p:ask", "ask", source="published-heldout")
    corpus = write(tmp_path / "c.jsonl", [
        row("h", "p:ask", "ask"), row("run:0:3", "p:refuse", "ask", source="published"), held])
    _, summary = frames(corpus, [EchoProfile()], ["published-heldout"])
    assert summary["source"].to_list() == ["all", "published-heldout"]
    assert summary["n"].to_list() == [1, 1] and summary["accuracy"].to_list() == [1.0, 1.0]
    with pytest.raises(InputError, match=r"c\.jsonl: no row of source publishd"):
        frames(corpus, [EchoProfile()], ["publishd"])


def test_emissions_built_from_rows(tmp_path: Path) -> None:
    corpus = write(tmp_path / "c.jsonl", [
        row("s", "I cannot", "tool_call", structured_calls=True, parse="ok"),
        row("t", '```json\n{"name": "ls", "arguments": {}}\n```', "tool_call", parse="ok"),
        row("m", '[{"name": "ls"', "malformed", parse="malformed"),
        row("e", " ", "other"),
    ])
    frame = predictions_frame(load_corpus(corpus), ["paper", "default"])
    got = {
        (r["profile"], r["id"]): (r["predicted"], r["rule"]) for r in frame.iter_rows(named=True)
    }
    assert got[("paper", "s")] == got[("default", "s")] == ("tool_call", "structured")
    assert got[("paper", "t")] == ("other", "paper:other")  # the paper profile's blind spot
    assert got[("default", "t")] == ("tool_call", "default:tool_call:parsed")
    assert got[("default", "m")][0] == got[("paper", "m")][0] == "malformed"
    assert got[("default", "e")] == (NO_CLASS, "empty")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"label": "maybe"}, "label"),  # replaces the good label
        ({"source": "web"}, "source"),
        ({"source": "model"}, "provenance: required"),
        ({"provenance": PROVENANCE}, "provenance: required"),  # on a hand row
        ({"source": "model", "provenance": PROVENANCE}, "is not 'model-m-sri-irrelevance-"),
        ({"id": MODEL_ID, "source": "model", "provenance": {**PROVENANCE, "step": "x"}},
         "provenance.step"),
        ({"id": MODEL_ID, "source": "model", "provenance": {**PROVENANCE, "extra": 1}},
         "provenance.extra"),
        ({"id": MODEL_ID, "source": "model",
          "provenance": {k: v for k, v in PROVENANCE.items() if k != "case"}}, "provenance.case"),
        ({"structured_calls": True}, "structured_calls needs parse 'ok'"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_rows_name_their_line(tmp_path: Path, bad: dict[str, object], message: str) -> None:
    corpus = write(tmp_path / "c.jsonl", [row("a", "x", "other"), row("b", "y", "other", **bad)])
    with pytest.raises(InputError, match=rf"c\.jsonl:2: (?s:.*){message}"):
        load_corpus(corpus)


def test_duplicate_ids_and_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"duplicate ids \['a'\]"):
        load_corpus(write(tmp_path / "d.jsonl", [row("a", "x", "other")] * 2))
    with pytest.raises(InputError, match="no rows"):
        load_corpus(write(tmp_path / "e.jsonl", []))


def test_model_rows_carry_their_provenance(tmp_path: Path) -> None:
    model_row = row(MODEL_ID, "x", "ask", source="model", provenance=PROVENANCE)
    (loaded,) = load_corpus(write(tmp_path / "c.jsonl", [model_row]))
    assert loaded.provenance is not None and loaded.provenance.case == "irrelevance_3"
    assert loaded.provenance.weights_sha256 is None


def test_render_markdown() -> None:
    table, summary = frames(CORPUS, ["paper", "default"])
    text = render_markdown(table, summary)
    assert text.startswith("| profile | source | n | accuracy | macro-F1 | kappa |\n")
    assert "| source | class | support | paper P / R / F1 / kappa | default P / R / F1 / kappa |" \
        in text
    assert all(f"\n| {source} | {name} | " in text
               for source in ("all", "hand", "model") for name in RECORDED_CLASSES)


def test_the_corpus_is_hand_labelled_and_covers_every_class() -> None:
    rows = load_corpus(CORPUS)
    hand = [r for r in rows if r.source == "hand"]
    assert len(hand) >= 120
    counts = {name: sum(r.label == name for r in hand) for name in RECORDED_CLASSES}
    assert min(counts.values()) >= 15, counts
    assert all(r.reason.strip() and "\n" not in r.reason for r in rows)
    assert {r.parse for r in rows} == {"none", "ok", "malformed"}
    assert any(r.structured_calls for r in rows)


def test_the_corpus_holds_distinct_real_emissions_of_both_models() -> None:
    real = [r for r in load_corpus(CORPUS) if r.provenance is not None]
    assert len(real) >= REAL_ROWS
    assert len({(r.text, r.structured_calls, r.parse) for r in real}) == len(real)
    assert {r.provenance.model for r in real} == {"smollm2-135m", "qwen2.5-coder-0.5b"}
    assert {r.provenance.category for r in real} >= {"irrelevance", "live_irrelevance"}
    assert {r.provenance.variant for r in real} >= {"baseline", "system-permission"}
    assert all(r.provenance.weights_sha256 for r in real)


def test_default_beats_paper_on_the_corpus() -> None:
    every = frames(CORPUS, ["paper", "default"])[1].filter(source="all")
    summary = {r["profile"]: r for r in every.iter_rows(named=True)}
    assert summary["default"]["accuracy"] > summary["paper"]["accuracy"]
    assert summary["default"]["kappa"] > summary["paper"]["kappa"]
    assert summary["default"]["macro_f1"] > summary["paper"]["macro_f1"]


def test_held_out_pool_per_agent(tmp_path: Path) -> None:
    """The held-out draws pooled, then that pool per published agent (the results file's
    submission name up to its first `_`); a draw alone gets no per-agent rows."""
    rows = [row("alpha_org_2025__airline:1:2", "p:ask", "ask", source="published-heldout"),
            row("alpha_org_2025__retail:4:5", "p:other", "ask", source="published-heldout-2"),
            row("beta-1_org__airline:2:3", "p:refuse", "refuse", source="published-heldout-2"),
            row("alpha_org_2025__airline:9:9", "p:ask", "ask", source="published")]
    summary = frames(write(tmp_path / "c.jsonl", rows), [EchoProfile()])[1]
    got = {r["source"]: (r["n"], r["accuracy"]) for r in summary.iter_rows(named=True)}
    assert got["published-heldout-all"] == (3, 2 / 3)
    assert got["published-heldout-all:alpha"] == (2, 0.5)
    assert got["published-heldout-all:beta-1"] == (1, 1.0)
    assert list(got)[-3:] == ["published-heldout-all", "published-heldout-all:alpha",
                              "published-heldout-all:beta-1"]
    real = row("toolorchestra_nvidia_2025-12-02__toolorchestra_airline_x:3:12", "p:ask", "ask",
               source="published-heldout-2")
    agents = frames(write(tmp_path / "e.jsonl", [*rows, real]), [EchoProfile()])[1]
    assert "published-heldout-all:toolorchestra" in agents["source"].to_list()
    alone = frames(write(tmp_path / "d.jsonl", rows[:1] + rows[3:]), [EchoProfile()])
    assert not any(":" in s for s in alone[1]["source"].to_list())
