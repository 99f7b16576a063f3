"""Validate classifier profiles against a labelled corpus of emissions.

A corpus is JSONL, one row per emission: `id`, `text`, `structured_calls` (the backend returned
structured calls), `parse` (what the harness made of the text: none/ok/malformed), `label` (one
of `records.RECORDED_CLASSES`), `reason` (one line) and `source`: `hand` (written by hand), or
`model` (a real emission taken from a trajectory of this pipeline; `classify.corpus` samples
them) with its `provenance` (model, variant, benchmark, category, case, turn, step, weights hash)
and the id `model-<model>-<variant>-<category>-<case>-t<turn>-s<step>`; or `published` (an agent
turn of a published τ² run, id `<results file stem>:<simulation>:<message>`; its provenance is
`tests/data/published_turns.jsonl`, built by `tests/support/published_turns.py`); or
`published-heldout`, `published-heldout-2` and `published-heldout-3` (the held-out draws of
the same runs, `tests/data/published_heldout_turns.jsonl`, `published_heldout2_turns.jsonl` and
`published_heldout3_turns.jsonl`: each scored before any rule is read on it); or
`bfcl-heldout`, `bfcl-heldout-2`, `bfcl-heldout-3` (BFCL irrelevance replies of the
leaderboard panel, id `<model folder>:<case id>`, `tests/data/bfcl_heldout_turns.jsonl`,
`bfcl_heldout2_turns.jsonl`, `bfcl_heldout3_turns.jsonl`, built and merged by
`tests/support/bfcl_heldout.py`: frozen and labelled blind by two readers before any rule
change, issue 41) and `bfcl-dev` (a draw of the panel, one reader, to write rules on). A row
may carry `context`, what the model saw at the emission's turn as the classify stage gives it
(`classify.base.Context`); every profile classifies the row in it (none: `NO_CONTEXT`).

Metrics, per profile and per source group (`source_groups`: all rows, each source, the
earlier sources `hand+model` apart from any later one, e.g. `published`, the held-out draws
together, `published-heldout-all`, and that pool per published agent, `group_filters`):
- per class: precision = TP / predicted, recall = TP / support, F1 their harmonic mean, each 0.0
  when its denominator is 0; a class with neither gold rows nor predictions is absent (nulls);
  its kappa is Cohen's kappa of the class against the rest (gold is the class or not,
  predicted is the class or not; null when chance agreement is 1).
- accuracy: share of rows whose predicted class is the label.
- macro-F1: mean F1 over the classes present (in the labels or the predictions).
- Cohen's kappa: (p_o - p_e) / (1 - p_e), p_e = sum over categories of gold share x predicted
  share; null when p_e = 1.
A profile that gives no class (empty text) predicts `none`: always wrong, in no class's row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Annotated, Literal, TypedDict, TypeVar

import polars as pl
from msgspec import Meta

from toolcalib.classify.base import NO_CONTEXT, Context, Profile
from toolcalib.classify.profiles import get_profile
from toolcalib.config import SHA256, StrictModel
from toolcalib.jsonio import InputError, iter_records
from toolcalib.records import RECORDED_CLASSES, Emission, RecordedClass, ToolCall


class LabelledRow(StrictModel, frozen=True, kw_only=True):
    """A row of a labelled JSONL corpus (`load_rows`), with a unique `id`."""

    id: str


Row = TypeVar("Row", bound=LabelledRow)

NO_CLASS = "none"
"""The prediction recorded when a profile gives no class."""
CORPUS_CALL = ToolCall(name="corpus_call")
"""Stands in for the calls of a row the harness parsed (or the backend structured)."""

ALL_SOURCES = "all"
EARLIER_SOURCES = ("hand", "model")
"""The corpus's first sources, reported together (`hand+model`) once it holds others."""
HELDOUT_PREFIX = "published-heldout"
HELDOUT_GROUP = "published-heldout-all"
"""Every held-out draw (`published-heldout*`), reported together once there are several."""
AGENT = pl.col("id").str.splitn("_", 2).struct.field("field_0")
"""The agent of a published row: its results file's submission name up to the first `_`
(`toolorchestra_nvidia_2025-12-02__toolorchestra_airline_...:3:12` -> `toolorchestra`)."""
BFCL_HELDOUT = "bfcl-heldout"
"""How the BFCL irrelevance held-out draws' sources begin; each is reported per panel model
too (`<source>:<model>`)."""
PANEL_MODEL = pl.col("id").str.splitn(":", 2).struct.field("field_0")
"""The panel model of a BFCL row: its id up to the `:` (`<model folder>:<case>`)."""
PREDICTION_SCHEMA: dict[str, pl.DataType] = {
    "profile": pl.String(),
    "id": pl.String(),
    "source": pl.String(),
    "label": pl.String(),
    "predicted": pl.String(),
    "correct": pl.Boolean(),
    "rule": pl.String(),
    "evidence": pl.String(),
}


class Provenance(StrictModel, frozen=True, kw_only=True):
    """Where a real emission was taken from: the run, the case, the turn and the step."""

    model: str
    variant: str
    benchmark: str
    category: str
    case: str
    turn: Annotated[int, Meta(ge=0)]
    step: Annotated[int, Meta(ge=0)]
    weights_sha256: SHA256 | None = None

    def row_id(self) -> str:
        """The emission's corpus id: `model-<model>-<variant>-<category>-<case>-t<turn>-s<step>`."""
        return (f"model-{self.model}-{self.variant}-{self.category}-{self.case}"
                f"-t{self.turn}-s{self.step}")


class CorpusRow(LabelledRow, frozen=True, kw_only=True):
    """One labelled emission."""

    text: str
    structured_calls: bool
    parse: Literal["none", "ok", "malformed"]
    label: RecordedClass
    reason: str
    source: Literal["hand", "model", "published", "published-heldout", "published-heldout-2",
                    "published-heldout-3", "bfcl-heldout", "bfcl-heldout-2", "bfcl-heldout-3",
                    "bfcl-dev"]
    provenance: Provenance | None = None
    context: Context = NO_CONTEXT
    """What the model saw at the emission's turn (`classify.base.Context`; JSON
    `{"user": [...], "tools": [...]}`), as the classify stage gives it; absent: nothing known
    (a hand-written row)."""

    def __post_init__(self) -> None:
        """Structured calls were parsed; a `model` row, and it alone, has its provenance,
        which gives its id."""
        if self.structured_calls and self.parse != "ok":
            raise ValueError("structured_calls needs parse 'ok'")
        if (self.source == "model") != (self.provenance is not None):
            raise ValueError("provenance: required for source 'model', absent otherwise")
        if self.provenance is not None and self.id != self.provenance.row_id():
            raise ValueError(f"id {self.id!r} is not {self.provenance.row_id()!r} (provenance)")

    def emission(self) -> Emission:
        """The emission as the classifier sees it after the harness read it."""
        calls = [CORPUS_CALL] if self.parse == "ok" else []
        return Emission(
            text=self.text, tool_calls=calls, structured=self.structured_calls, parse=self.parse
        )


def load_corpus(path: str | Path) -> list[CorpusRow]:
    """The rows of a corpus file; a bad line is an error naming its line; ids are unique."""
    return load_rows(path, CorpusRow)


def load_rows(path: str | Path, model: type[Row]) -> list[Row]:
    """The rows of a labelled JSONL corpus as `model` (a `LabelledRow`), read as records are
    (`jsonio.iter_records`): a bad line is an error naming its line and field; ids are unique;
    an empty corpus is an error."""
    rows = list(iter_records(path, model))
    duplicates = sorted(key for key, count in Counter(r.id for r in rows).items() if count > 1)
    if duplicates:
        raise InputError(f"{path}: duplicate ids {duplicates}")
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows


def _resolve(profiles: Sequence[str | Profile]) -> list[Profile]:
    return [get_profile(p) if isinstance(p, str) else p for p in profiles]


def predictions_frame(rows: Sequence[CorpusRow], profiles: Sequence[str | Profile]) -> pl.DataFrame:
    """One row per (profile, corpus row): label, prediction, rule and evidence."""
    records = []
    emissions = [row.emission() for row in rows]
    for profile in _resolve(profiles):
        profile.prepare(emissions)
        for row, emission in zip(rows, emissions, strict=True):
            action = profile.classify(emission, row.context)
            predicted = action.action or NO_CLASS
            records.append({
                "profile": profile.name, "id": row.id, "source": row.source, "label": row.label,
                "predicted": predicted, "correct": predicted == row.label,
                "rule": action.rule, "evidence": action.evidence,
            })
    return pl.DataFrame(records, schema=PREDICTION_SCHEMA)


ClassScore = TypedDict("ClassScore", {
    "class": str, "precision": float | None, "recall": float | None, "f1": float | None,
    "kappa": float | None, "support": int})
"""One class's scores (`class_scores`; a `metrics.validation.VALIDATION` row's measures)."""


def class_scores(gold: Sequence[str], predicted: Sequence[str]) -> list[ClassScore]:
    """Precision, recall, F1, kappa and support of every class a recorded emission can have
    (module docstring; a corpus row's text is recorded, so no row is `unknown`)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} labels but {len(predicted)} predictions")
    scores: list[ClassScore] = []
    for name in RECORDED_CLASSES:
        support = sum(g == name for g in gold)
        guessed = sum(p == name for p in predicted)
        hits = sum(g == p == name for g, p in zip(gold, predicted, strict=True))
        if support == guessed == 0:
            precision = recall = f1 = kappa = None
        else:
            kappa = cohen_kappa([g == name for g in gold], [p == name for p in predicted])
            precision = hits / guessed if guessed else 0.0
            recall = hits / support if support else 0.0
            total = precision + recall
            f1 = 2 * precision * recall / total if total else 0.0
        scores.append({"class": name, "precision": precision, "recall": recall, "f1": f1,
                       "kappa": kappa, "support": support})
    return scores


def cohen_kappa(gold: Sequence[Hashable], predicted: Sequence[Hashable]) -> float | None:
    """Cohen's kappa between labels and predictions; None when chance agreement is 1."""
    n = len(gold)
    if n == 0 or n != len(predicted):
        raise ValueError("kappa needs equally many labels and predictions, at least one")
    observed = sum(g == p for g, p in zip(gold, predicted, strict=True)) / n
    gold_counts, predicted_counts = Counter(gold), Counter(predicted)
    expected = sum(gold_counts[k] * predicted_counts[k] for k in gold_counts) / n**2
    return None if expected == 1 else (observed - expected) / (1 - expected)


def summary_scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, object]:
    """n, accuracy, macro-F1 and kappa of one profile's predictions."""
    f1s = [s["f1"] for s in class_scores(gold, predicted) if s["f1"] is not None]
    return {
        "n": len(gold),
        "accuracy": sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold),
        "macro_f1": sum(f1s) / len(f1s) if f1s else None,
        "kappa": cohen_kappa(gold, predicted),
    }


def source_groups(sources: Sequence[str]) -> dict[str, list[str]]:
    """Group name -> the sources it holds: `all`, each source (sorted), `hand+model` when the
    corpus holds other sources beside both of those, and `published-heldout-all` (every
    held-out draw, `published-heldout*`) when it holds more than one draw."""
    present = sorted(set(sources))
    groups = {ALL_SOURCES: present, **{source: [source] for source in present}}
    if set(EARLIER_SOURCES) < set(present):
        groups["+".join(EARLIER_SOURCES)] = list(EARLIER_SOURCES)
    if len(draws := [s for s in present if s.startswith(HELDOUT_PREFIX)]) > 1:
        groups[HELDOUT_GROUP] = draws
    return groups


def group_filters(predictions: pl.DataFrame) -> dict[str, pl.Expr]:
    """Group name -> its rows: the `source_groups`, then, when the held-out draws are pooled,
    the pool per agent (`published-heldout-all:<agent>`, agents sorted): how far the
    classifier can be trusted on each published agent's text; and each BFCL held-out draw per
    panel model (`bfcl-heldout:<model>`, `bfcl-heldout-2:<model>`, ...)."""
    groups = source_groups(predictions["source"].to_list())
    filters = {name: pl.col("source").is_in(sources) for name, sources in groups.items()}
    if pooled := groups.get(HELDOUT_GROUP):
        held = pl.col("source").is_in(pooled)
        for agent in sorted(predictions.filter(held).select(AGENT.unique()).to_series()):
            filters[f"{HELDOUT_GROUP}:{agent}"] = held & (AGENT == agent)
    for source in sorted(s for s in groups[ALL_SOURCES] if s.startswith(BFCL_HELDOUT)):
        drawn = pl.col("source") == source
        for model in sorted(predictions.filter(drawn).select(PANEL_MODEL.unique()).to_series()):
            filters[f"{source}:{model}"] = drawn & (PANEL_MODEL == model)
    return filters


def validation_scores(
    corpus_path: str | Path, profiles: Sequence[str | Profile],
    sources: Sequence[str] | None = None,
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Per profile and source group, in one pass: each class's scores (`class_scores`) and the
    summary (`summary_scores`), keyed by `profile` and `source` (their tables:
    `metrics.validation`); `sources`: only the corpus rows of these sources (e.g. the held-out
    draw, to score a judge that is paid per request on it alone)."""
    rows = load_corpus(corpus_path)
    if sources is not None:
        unknown = sorted(set(sources) - {row.source for row in rows})
        if unknown:
            raise InputError(f"{corpus_path}: no row of source {', '.join(unknown)}")
        rows = [row for row in rows if row.source in sources]
    predictions = predictions_frame(rows, profiles)
    groups = group_filters(predictions)
    table: list[dict[str, object]] = []
    summary: list[dict[str, object]] = []
    for profile in _resolve(profiles):
        for group, chosen in groups.items():
            mine = predictions.filter((pl.col("profile") == profile.name) & chosen)
            gold, predicted = mine["label"].to_list(), mine["predicted"].to_list()
            keys = {"profile": profile.name, "source": group}
            table += [{**keys, **s} for s in class_scores(gold, predicted)]
            summary.append({**keys, **summary_scores(gold, predicted)})
    return table, summary


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_markdown(table: pl.DataFrame, summary: pl.DataFrame) -> str:
    """A summary table (one row per profile and source group), then per source group and
    class P / R / F1 / kappa for each profile."""
    lines = ["| profile | source | n | accuracy | macro-F1 | kappa |",
             "|---|---|---:|---:|---:|---:|"]
    for row in summary.iter_rows(named=True):
        lines.append(f"| {row['profile']} | {row['source']} | {row['n']} | "
                     f"{_number(row['accuracy'])} | {_number(row['macro_f1'])} | "
                     f"{_number(row['kappa'])} |")
    profiles = list(dict.fromkeys(summary["profile"].to_list()))
    lines += ["", "| source | class | support | "
              + " | ".join(f"{p} P / R / F1 / kappa" for p in profiles) + " |",
              "|---|---|---:|" + "---:|" * len(profiles)]
    for source in dict.fromkeys(summary["source"].to_list()):
        for name in RECORDED_CLASSES:
            cells, support = [], 0
            for profile in profiles:
                found = table.filter((pl.col("profile") == profile) & (pl.col("source") == source)
                                     & (pl.col("class") == name))
                if found.height == 0:
                    cells.append("–")
                    continue
                row = found.row(0, named=True)
                support = row["support"]
                cells.append(" / ".join(_number(row[k])
                                        for k in ("precision", "recall", "f1", "kappa")))
            lines.append(f"| {source} | {name} | {support} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
