"""The τ² plugin: cases from τ²'s tasks (ids, tools, write tools, gold classes and rules, bad
input), the reference user, the reference policies through classification, scoring, write
units and triples (a handful of tasks; all 164 in the committed default run), and the
normalize, generate, gold and evaluate stages on a few tasks."""

from __future__ import annotations

import copy
import csv
import json

import pytest

from tests.support.tau2_episodes import TAU2, cases_of, domain_cases, episodes, evaluate, policy
from toolcalib.benchmarks.tau2.environment import Tau2Environment
from toolcalib.benchmarks.tau2.gold import ASK_GOLD, REFUSE_RULE, TOOL_CALL_RULE
from toolcalib.benchmarks.tau2.loop import GREETING
from toolcalib.benchmarks.tau2.normalize import normalize_tasks
from toolcalib.benchmarks.tau2.policies import confirm_text
from toolcalib.benchmarks.tau2.user import (
    APPROVAL,
    MAX_REPLIES,
    NOTHING_KNOWN,
    STOP,
    ReferenceUser,
)
from toolcalib.classify.profiles import read_alone
from toolcalib.jsonio import InputError, read_records
from toolcalib.metrics.rows import ACC_WITHOUT_GOLD
from toolcalib.records import Case, Message
from toolcalib.stages.generate import USER_PROFILE

GOLD = {
    "airline": ({"tool_call": 43, "refuse": 7}, "2 10 19 20 21 22 35 42"),
    "retail": ({"tool_call": 112, "refuse": 2},
               "5 6 7 8 9 12 13 14 18 21 24 45 46 47 67 68 71 72 74 84 88 91 92 93 94 95 98 "
               "113"),
}
"""Per domain: tasks per gold class, and the ids of the tasks that are also `ask` by default
(`ask_gold: published`; airline 10 and retail 24 are refuse tasks)."""
RULES = {"refuse": REFUSE_RULE, "tool_call": TOOL_CALL_RULE}
FEW = ("airline_0", "airline_2", "retail_0")
"""A refuse task, an ask task with one write, a tool_call task with one write."""


# -- normalization ---------------------------------------------------------------------------

@pytest.mark.parametrize(("domain", "n_cases", "n_writes"), [("airline", 50, 6),
                                                            ("retail", 114, 7)])
def test_one_case_per_task(tau2_release, tau2_wheel, domain, n_cases, n_writes):
    cases = domain_cases(tau2_wheel, domain)
    tasks = tau2_release.tasks(domain)
    assert len(cases) == n_cases
    assert [c.id for c in cases] == [f"{domain}_{t['id']}" for t in tasks]
    assert [c.environment["task"] for c in cases] == tasks
    environment = Tau2Environment(tau2_release, domain)
    writes = sorted(environment.write_tools())
    assert len(writes) == n_writes and writes
    for number, case in enumerate(cases, start=1):
        assert (case.benchmark, case.category, case.gold_turn, case.open_turns) == (
            "tau2", domain, 0, True)
        assert [(t.index, t.messages, t.gold_action) for t in case.turns] == [
            (0, [], case.gold_action)]
        assert case.environment["domain"] == domain
        assert case.environment["write_tools"] == writes
        assert case.tools == environment.tools()
        assert case.gold_rule == RULES[case.gold_action]
        assert (case.source.file, case.source.line) == (
            f"tau2/data/tau2/domains/{domain}/tasks.json", number)
        assert case.source.artifact == tau2_wheel.name
    for tool in cases[0].tools:  # JSON-schema form
        assert set(tool) == {"name", "description", "parameters"}
        assert tool["parameters"]["type"] == "object"
        assert set(tool["parameters"].get("required", [])) <= set(
            tool["parameters"]["properties"])
    assert {t["name"] for t in cases[0].tools} >= set(writes)


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_gold_classes_by_the_published_rules(tau2_wheel, domain):
    counts, ask_ids = GOLD[domain]
    cases = domain_cases(tau2_wheel, domain)
    assert {gold: sum(c.gold_action == gold for c in cases) for gold in counts} == counts
    assert " ".join(c.environment["task"]["id"] for c in cases
                    if c.gold_also == {"ask": ASK_GOLD["published"]}) == ask_ids
    for case in cases:
        actions = case.environment["task"]["evaluation_criteria"].get("actions") or []
        assert (case.gold_action == "refuse") == (not actions), case.id
        assert case.gold_also in ({}, {"ask": ASK_GOLD["published"]}), case.id


TASK = {"id": "7", "user_scenario": {"instructions": {
    "domain": "airline", "reason_for_call": "r", "known_info": "k", "task_instructions": "t"}},
    "evaluation_criteria": {"actions": [{"name": "get_user_details", "arguments": {}}]}}


def _without(path: str) -> dict:
    task = copy.deepcopy(TASK)
    *parents, last = path.split(".")
    target = task
    for key in parents:
        target = target[key]
    del target[last]
    return task


@pytest.mark.parametrize(("bad", "field"), [
    (["not", "a", "task"], "a task is a JSON object, got list"),
    ("7", "a task is a JSON object, got str"),
    (_without("id"), "field 'id': missing or not a str"),
    ({**TASK, "id": 7}, "field 'id': missing or not a str"),
    (_without("user_scenario"), "field 'user_scenario': missing or not a dict"),
    (_without("user_scenario.instructions"), "field 'user_scenario.instructions': missing"),
    (_without("user_scenario.instructions.reason_for_call"),
     "field 'user_scenario.instructions.reason_for_call': missing or not a string"),
    ({**TASK, "evaluation_criteria": []}, "field 'evaluation_criteria': not an object"),
    ({**TASK, "evaluation_criteria": {"actions": [{"name": "a"}, {"arguments": {}}]}},
     "field 'evaluation_criteria.actions\\[2\\]': an action needs a string 'name'"),
    ({**TASK, "evaluation_criteria": {"actions": [{"name": "a", "arguments": []}]}},
     "field 'evaluation_criteria.actions\\[1\\]': an action needs"),
])
def test_a_malformed_task_names_file_task_and_field(bad, field):
    good = copy.deepcopy(TASK)
    with pytest.raises(InputError, match=f"^w.whl:d/tasks.json: task 2: {field}"):
        normalize_tasks("airline", [good, bad], [], frozenset(), file="d/tasks.json",
                        artifact="w.whl", artifact_sha256="0" * 64)
    (case,) = normalize_tasks("airline", [good], [], frozenset({"b", "a"}), file="d/tasks.json",
                              artifact="w.whl", artifact_sha256="0" * 64)
    assert (case.id, case.gold_action, case.environment["write_tools"]) == (
        "airline_7", "tool_call", ["a", "b"])


def test_an_unknown_domain_names_the_known_ones(tau2_wheel):
    with pytest.raises(InputError, match=r"unknown τ² domain 'telecom' \(known: airline, retail\)"):
        TAU2.load_cases(tau2_wheel, "telecom")


# -- the reference user ----------------------------------------------------------------------

def _said(*turns: tuple[str, str]) -> list[Message]:
    """A conversation as the loop keeps it: system prompt, greeting, then (role, text)s."""
    return [Message(role="system", content="policy"), Message(role="assistant", content=GREETING),
            *(Message(role=role, content=content) for role, content in turns)]


def test_the_reference_user(tau2_release):
    task = next(t for t in tau2_release.tasks("airline") if t["id"] == "2")
    instructions = task["user_scenario"]["instructions"]
    reason, known = instructions["reason_for_call"].strip(), instructions["known_info"].strip()
    user = ReferenceUser(read_alone(USER_PROFILE))
    assert user.identity() == {"user": "reference", "version": 1}
    opening = user.reply(task, _said())
    assert opening == f"{reason}\n{known}"
    assert isinstance(opening, str)  # a turn that asks no backend (never a Request)
    asked = _said(("user", opening),
                  ("assistant", "Could you please tell me your user id and reservation number?"))
    assert user.reply(task, asked) == known
    write = task["evaluation_criteria"]["actions"][-1]
    assert user.reply(task, _said(("user", opening),
                                   ("assistant", confirm_text(write)))) == APPROVAL
    for other in ("Your request has been completed.", "I'm sorry, but I cannot do this.",
                  "Your reservation has 2 passengers."):
        assert user.reply(task, _said(("user", opening), ("assistant", other))) == STOP
    no_known = copy.deepcopy(task)
    no_known["user_scenario"]["instructions"]["known_info"] = None
    assert user.reply(no_known, _said()) == reason
    assert user.reply(no_known, _said(("user", reason),
                                       ("assistant", asked[-1].content))) == NOTHING_KNOWN


def test_the_reference_user_stops_after_max_replies(tau2_release):
    task = tau2_release.tasks("retail")[5]
    question = ("assistant", "Could you please tell me your email address?")
    turns = [turn for _ in range(MAX_REPLIES - 1) for turn in (("user", "x"), question)]
    user = ReferenceUser(read_alone(USER_PROFILE))
    assert user.reply(task, _said(*turns)) != STOP
    assert user.reply(task, _said(*turns, ("user", "x"), question)) == STOP


# -- the reference policies ------------------------------------------------------------------

def _policy_runs(wheel, cases, names):
    return {name: evaluate(wheel, cases, episodes(wheel, cases, policy(name)))
            for name in names}


POLICIES = ("oracle", "oracle_no_confirm", "never_call", "always_ask", "always_refuse",
            "always_call")


SAME = ("n", "n_excluded", "n_step_cap", "gar", "gar_emission", "ter", "acc", ACC_WITHOUT_GOLD,
        "gold_without_acc")
"""What the oracle's confirmations change in no gold class but `confirm` (the gold-turn rates
may differ: the oracle's first turn may be a request for approval)."""


def _same(row):
    return {column: row[column] for column in SAME}


def check_policies(runs, cells_expected):
    """The reference policies' meanings, on whatever set of tasks `runs` covers."""
    oracle, no_confirm = runs["oracle"], runs["oracle_no_confirm"]
    assert set(oracle.triples) == cells_expected
    assert all(s.passed and s.details["reward"] == 1.0 for s in oracle.scores)
    for key, cell in oracle.triples.items():
        assert (cell["gar"], cell["acc"], cell["n_excluded"], cell["n_step_cap"]) == (
            1.0, 1.0, 0, 0), key
        assert cell["ter"] == (0.0 if key[1] == "refuse" else 1.0), key
        assert (cell["gar_structural"], cell["gar_structural_n"]) == (1.0, cell["n"]), key
    assert [s.passed for s in no_confirm.scores] == [s.passed for s in oracle.scores]
    assert len(no_confirm.units()) == len(oracle.units())
    assert all(u["bound"] == ACC_WITHOUT_GOLD and not u["gold_emitted"]
               for u in no_confirm.units())
    for key, cell in no_confirm.triples.items():
        if key[1] == "confirm":
            assert (cell["gar"], cell["acc"], cell[ACC_WITHOUT_GOLD]) == (
                0.0, oracle.cell(*key)["acc"], cell["n"]), key
        else:
            assert _same(cell) == _same(oracle.cell(*key)), key
    assert all(cell["gar"] == 1.0 and cell["ter"] == 0.0
               for (_, gold), cell in runs["always_refuse"].triples.items() if gold == "refuse")
    assert all(cell["ter"] == 0.0 for cell in runs["always_refuse"].triples.values())
    assert all(cell["gar"] == 1.0 for (_, gold), cell in runs["always_ask"].triples.items()
               if gold == "ask")
    for name in ("never_call", "always_ask", "always_refuse"):
        assert not runs[name].units(), name
        assert all(cell["ter"] == 0.0 for cell in runs[name].triples.values()), name
    assert all(cell["ter"] == 1.0 for cell in runs["always_call"].triples.values())
    for name in ("never_call", "always_ask", "always_refuse"):  # no write: refuse read as hit
        assert all(cell["gar_structural"] == 1.0 for (_, gold), cell
                   in runs[name].triples.items() if gold == "refuse"), name
    assert all(cell["gar"] == 0.0 for cell in runs["never_call"].triples.values())
    text_only = [[s.passed for s in runs[name].scores]
                 for name in ("never_call", "always_ask", "always_refuse")]
    assert text_only[0] == text_only[1] == text_only[2]  # no write: the same database


def test_reference_policies_on_a_few_tasks(tau2_wheel):
    cases = cases_of(tau2_wheel, *FEW)
    runs = _policy_runs(tau2_wheel, cases, POLICIES)
    check_policies(runs, {("airline", "refuse"), ("airline", "ask"), ("airline", "confirm"),
                          ("airline", "tool_call"), ("retail", "tool_call"),
                          ("retail", "confirm")})
    units = runs["oracle"].units()
    assert [(u["case_id"], u["gold_turn"], u["emitted"]) for u in units] == [
        ("airline_2#write1", 2, "confirm|tool_call"), ("retail_0#write1", 1,
                                                       "confirm|tool_call")]
    assert [u["emitted"] for u in runs["oracle_no_confirm"].units()] == ["tool_call"] * 2


def _committed_cells(name):
    """The τ² cells of policy `name` in the committed default run's `triples.csv`, by
    (domain, gold class), numbers as floats."""
    with open("results/metrics/triples.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle)
                if row["model"] == f"policy-{name}" and row["benchmark"] == "tau2"]
    return {(row["category"], row["gold_action"]): {
        key: float(value) for key, value in row.items()
        if key not in ("model", "variant", "benchmark", "category", "gold_action")}
        for row in rows}


def test_reference_policies_on_every_task_in_the_committed_run():
    """The policies' meanings on all 164 tasks, read from the committed default run's triples
    (`results/metrics/triples.csv`): the `repro` tier rebuilds that run from scratch and
    requires every output, this file included, to equal the committed one, so together they
    check the live code on every task (a slow test recomputing it took 272 s of CI)."""
    cells = {name: _committed_cells(name) for name in POLICIES}
    oracle, no_confirm = cells["oracle"], cells["oracle_no_confirm"]
    assert set(oracle) == {(d, g) for d in ("airline", "retail")
                           for g in ("ask", "confirm", "refuse", "tool_call")}
    assert {key: cell["n"] for key, cell in oracle.items() if key[1] == "confirm"} == {
        ("airline", "confirm"): 55, ("retail", "confirm"): 178}
    assert {key: cell["n"] for key, cell in oracle.items() if key[1] != "confirm"} == {
        ("airline", "tool_call"): 43, ("airline", "refuse"): 7, ("airline", "ask"): 8,
        ("retail", "tool_call"): 112, ("retail", "refuse"): 2, ("retail", "ask"): 28}
    for key, cell in oracle.items():
        assert (cell["gar"], cell["acc"], cell["n_excluded"], cell["n_step_cap"],
                cell["n_error"]) == (1.0, 1.0, 0, 0, 0), key
        refuse_tasks = {"ask": {"airline": 1, "retail": 1}.get(key[0]), "refuse": cell["n"]}
        assert cell["ter_k"] == cell["n"] - (refuse_tasks.get(key[1]) or 0), key  # no call
    for key, cell in no_confirm.items():
        if key[1] == "confirm":
            assert (cell["gar"], cell["acc"], cell[ACC_WITHOUT_GOLD]) == (
                0.0, 1.0, cell["n"]), key
        else:
            assert {c: cell[c] for c in SAME} == {c: oracle[key][c] for c in SAME}, key
    for name in ("never_call", "always_ask", "always_refuse"):
        assert not any(gold == "confirm" for _, gold in cells[name]), name
        assert all(cell["ter"] == 0.0 for cell in cells[name].values()), name
    assert all(cell["gar"] == 0.0 for cell in cells["never_call"].values())
    assert all(cells["always_refuse"][key]["gar"] == 1.0 for key in cells["always_refuse"]
               if key[1] == "refuse")
    assert all(cells["always_ask"][key]["gar"] == 1.0 for key in cells["always_ask"]
               if key[1] == "ask")
    assert all(cell["ter"] == 1.0 for cell in cells["always_call"].values())
    text_only = [{key: cell["acc_k"] for key, cell in cells[name].items()}
                 for name in ("never_call", "always_ask", "always_refuse")]
    assert text_only[0] == text_only[1] == text_only[2]  # no write: the same database


# -- the stages ------------------------------------------------------------------------------

def test_normalize_generate_gold_evaluate(tau2_wheel, tmp_path):
    from toolcalib.stages import evaluate as evaluate_stage
    from toolcalib.stages import generate, gold, normalize

    source, ids = str(tau2_wheel), ["airline_0", "airline_1", "airline_2"]
    cases, golds = tmp_path / "cases.jsonl", tmp_path / "gold.jsonl"
    normalize.run(benchmark="tau2", category="airline", source=source, out=str(cases))
    assert len(read_records(str(cases), Case)) == 50
    spec = json.dumps({"name": "oracle", "backend": "policy", "options": {"policy": "oracle"}})
    out = tmp_path / "trajectories.jsonl"
    generate.run(spec, "baseline", "tau2", str(cases), source, str(out), case_ids=ids,
                 benchmark_options={"max_steps": 100})
    trajectories = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(t["case_id"], t["termination"], t["user_identity"]) for t in trajectories] == [
        (i, "user_stop", {"user": "reference", "version": 1}) for i in ids]
    small = tmp_path / "selected.jsonl"
    small.write_text("".join(line + "\n" for line in cases.read_text().splitlines()
                             if json.loads(line)["id"] in ids))
    gold.run(benchmark="tau2", cases=str(small), source=source, out=str(golds))
    assert [json.loads(line)["case_id"] for line in golds.read_text().splitlines()] == ids
    tables = {name: str(tmp_path / name) for name in ("actions.jsonl", "scores.jsonl",
                                                      "per_case.jsonl", "triples.csv")}
    evaluate_stage.run("default", "tau2", source, [str(small)], [str(golds)], [str(out)],
                       [tables["actions.jsonl"]], [tables["scores.jsonl"]],
                       tables["per_case.jsonl"], tables["triples.csv"])
    per_case = [json.loads(line) for line in open(tables["per_case.jsonl"])]
    assert [(r["case_id"], r["gold_action"], r["emitted"], r["passed"]) for r in per_case] == [
        ("airline_0", "refuse", "refuse", True), ("airline_1", "tool_call", "tool_call", True),
        ("airline_2", "tool_call", "ask|tool_call", True),
        ("airline_2#ask", "ask", "ask|tool_call", True),
        ("airline_2#write1", "confirm", "confirm|tool_call", True)]
    with open(tables["triples.csv"], newline="") as handle:
        triples = list(csv.DictReader(handle))
    assert [(r["category"], r["gold_action"], int(r["n"]), float(r["gar"]), float(r["acc"]))
            for r in triples] == [("airline", gold_class, n, 1.0, 1.0)
        for gold_class, n in (("ask", 1), ("confirm", 1), ("refuse", 1), ("tool_call", 2))]
    scores = [json.loads(line) for line in open(tables["scores.jsonl"])]
    assert [json.loads(s["details"])["reward"] for s in scores] == [1.0, 1.0, 1.0]
    _audit_units(tmp_path, {"cases": small, "gold": golds, "trajectories": out,
                            "actions": tables["actions.jsonl"], "scores": tables["scores.jsonl"],
                            "triples": tables["triples.csv"],
                            "per_case": tables["per_case.jsonl"]})


def _audit_units(tmp_path, files):
    """`toolcalib audit` on a τ² domain's cells: one per gold class (`--gold`), a write unit
    read from its case's trajectory."""
    import polars as pl

    from toolcalib.provenance.audit.main import audit
    from toolcalib.provenance.audit.render import render
    from toolcalib.provenance.lock import ProvenanceError

    root = tmp_path / "run"
    fields = {"model": "oracle", "variant": "baseline", "benchmark": "tau2",
              "category": "airline"}
    for role, template in (("cases", "results/cases/{benchmark}/{category}.jsonl"),
                           ("gold", "results/gold/{benchmark}/{category}.jsonl"),
                           ("trajectories", "results/trajectories/{model}/{variant}/"
                                            "{benchmark}/{category}.jsonl"),
                           ("actions", "results/actions/{model}/{variant}/{benchmark}/"
                                       "{category}.jsonl"),
                           ("scores", "results/scores/{model}/{variant}/{benchmark}/"
                                      "{category}.jsonl"),
                           ("triples", "results/metrics/triples.csv")):
        path = root / template.format(**fields)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(open(files[role], "rb").read())
    pl.read_ndjson(files["per_case"]).write_parquet(root / "results/metrics/per_case.parquet")
    (root / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    cell = tuple(fields.values())
    with pytest.raises(ProvenanceError, match=r"4 gold classes .*\(ask, confirm, refuse, "
                                         r"tool_call\): choose one with --gold"):
        audit(root, *cell, "gar")
    with pytest.raises(ProvenanceError, match="no gold class 'malformed'.* valid: ask, confirm"):
        audit(root, *cell, "gar", gold="malformed")
    for gold_class, ids in (("refuse", ["airline_0"]), ("confirm", ["airline_2#write1"]),
                            ("ask", ["airline_2#ask"]),
                            ("tool_call", ["airline_1", "airline_2"])):
        report = audit(root, *cell, "gar", gold=gold_class)
        assert report["gold_action"] == gold_class
        assert report["metric"]["matches"], report["metric"]["problems"]
        assert report["metric"]["numerator_cases"] == ids
    unit = audit(root, *cell, "acc", case="airline_2#write1", gold="confirm")["case"]
    assert unit["in_numerator"] and unit["verdict"]["passed"]
    assert [call["name"] for turn in unit["turns"] for step in turn["steps"]
            for call in step["calls"]][-1] == "send_certificate"  # the task's one write
    assert "airline_2#write1" in render(audit(root, *cell, "gar", case="airline_2#write1",
                                              gold="confirm"))


def test_audit_recomputes_the_structural_reading(tmp_path):
    """`gar_structural` is audited over its own denominator (`gar_structural_n`)."""
    import polars as pl

    from toolcalib.provenance.audit.recompute import recompute

    rows = pl.DataFrame({"model": ["m"] * 3, "variant": ["v"] * 3, "benchmark": ["tau2"] * 3,
                         "category": ["airline"] * 3, "case_id": ["a_1", "a_2", "a_3"],
                         "gold_action": ["refuse"] * 3, "scored": [True, True, False],
                         "structural_hit": [True, None, None]})
    row = {"gar_structural": 1.0, "gar_structural_k": 1, "gar_structural_n": 1,
           "gar_structural_lo": 0.206543, "gar_structural_hi": 1.0}
    got = recompute(rows, ("m", "v", "tau2", "airline"), "gar_structural", row, "refuse")
    assert got["matches"], got["problems"]
    assert (got["numerator_cases"], got["denominator_cases"]) == (["a_1"], ["a_1"])
    bad = recompute(rows, ("m", "v", "tau2", "airline"), "gar_structural",
                    row | {"gar_structural_n": 2}, "refuse")
    assert not bad["matches"] and "recomputed n 1 != table 2" in bad["problems"][0]
