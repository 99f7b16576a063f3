"""The per-case table and the triples as plain rows, and the bytes of the tables a run writes.

Standard library only: the `evaluate` process builds its run's tables without importing
polars. The polars functions `per_case` and `triples` are these rows as typed frames.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from toolcalib.jsonio import InputError
from toolcalib.metrics.spec import Column, TableSpec
from toolcalib.metrics.wilson import wilson
from toolcalib.records import ACTION_RANK

KEYS = ["model", "variant", "benchmark", "category"]
"""One triple per value of these columns and the gold class, in this sort order (a BFCL
category has one gold class; a τ² domain has several, and its `confirm` units)."""
CELL_KEYS = [*KEYS, "gold_action"]
"""What names one triple (a cell of the report)."""
CASE_KEYS = [*KEYS, "case_id"]
GOLD_COLUMNS = ["benchmark", "case_id", "gold_action", "gold_turn"]

ACC_WITHOUT_GOLD = "acc_without_gold"
"""Bound violation Acc > GAR: passed, yet the gold class was never emitted (grader masking)."""
GOLD_WITHOUT_ACC = "gold_without_acc"
"""Bound direction GAR > Acc: the gold class was emitted, yet the case failed."""


def bound_of(scored: bool, passed: bool | None, gold_emitted: bool | None) -> str | None:
    """A per-case row's `bound`: which bound a scored row violates, if any (every per-case
    row, a benchmark's units included, takes it from here); none where GAR is undecided
    (`gold_emitted` None)."""
    if gold_emitted is None:
        return None
    if scored and passed and not gold_emitted:
        return ACC_WITHOUT_GOLD
    if scored and not passed and gold_emitted:
        return GOLD_WITHOUT_ACC
    return None


CASES = TableSpec("per_case", 3, (
    *(Column(key) for key in CASE_KEYS), Column("gold_action", label="gold"),
    Column("gold_turn", "int"), Column("gold_turn_gold"), Column("emitted"),
    Column("gold_emitted", "bool"), Column("gold_turn_class"), Column("gold_turn_hit", "bool"),
    Column("tool_call_emitted", "bool"), Column("gold_turn_tool_call", "bool"),
    Column("emission_classes"), Column("gold_emitted_any_step", "bool"),
    Column("passed", "bool"), Column("scored", "bool"), Column("outcome"), Column("error_type"),
    Column("bound"), Column("probes_fired", "int"), Column("unclosed_reasoning_turns", "int"),
    Column("ambiguous_turns", "int"), Column("unknown_turns", "int"),
    Column("structural_hit", "bool"), Column("recorded_reward", "float"),
    Column("reward_disagreement"),
))
"""The per-case table (`per_case.jsonl` of a run, `per_case.parquet`). `structural_hit`: the
benchmark's published structural reading of the gold class (`Benchmark.structural`; τ² only,
null elsewhere): not GAR, reported beside it. `recorded_reward`: a published run's own recorded
verdict (null elsewhere), and `reward_disagreement` the named cause where it differs from
`passed`'s (`recorded_of`). `gold_emitted`, `gold_turn_hit` and `gold_emitted_any_step` are
null where undecided (`decided`), and then `bound` too; `unknown_turns`: the turns holding a
kept emission of class `unknown` (an output the record did not keep)."""
CASE_COLUMNS = CASES.names
"""The columns of a per-case table, in order."""
UNCLOSED_REASONING = ":other:unclosed_reasoning"
"""How the rule of an emission that is only an unclosed reasoning block ends (`default` and
`judge`: `default:other:unclosed_reasoning`; a malformed one: `malformed:` before it)."""
AMBIGUOUS = ":ambiguous:"
"""What the rule of a turn holds when the classifier's rules could not decide its class
(`default:refuse:ambiguous:refuse|ask`; `classify.default`)."""
UNKNOWN = "unknown"
"""The class of an output the record did not keep (`records.Emission.text_recorded`)."""

DIGITS = 6
"""Rates and bounds are rounded to this many decimals, for stable bytes."""
_RATES = (
    ("gar", "gold_emitted", "GAR"),
    ("gar_turn", "gold_turn_hit", "GAR@gold turn"),
    ("gar_emission", "gold_emitted_any_step", "GAR@any emission"),
    ("ter", "tool_call_emitted", "TER"),
    ("ter_turn", "gold_turn_tool_call", "TER@gold turn"),
    ("acc", "passed", "Acc"),
)
RATES: dict[str, str] = {rate: column for rate, column, _ in _RATES}
"""Each rate and the per-case column whose share of scored cases it is (of the scored cases
where it is decided, for a rate of `DECIDABLE`)."""
_COUNTS = (("n", "n"), ("n_excluded", "excluded"), ("n_context_overflow", "context overflow"),
           ("n_error", "error"), ("n_step_cap", "step cap"), ("n_probed", "probed"),
           ("n_gar_unknown", "GAR unknown"), (ACC_WITHOUT_GOLD, "Acc>GAR"),
           (GOLD_WITHOUT_ACC, "GAR>Acc"))
COUNTS = [count for count, _ in _COUNTS]
"""`n_excluded` = `n_context_overflow` + `n_error` (infrastructure, out of every denominator);
`n_probed`: scored cases where the variant's probe fired at least once; `n_gar_unknown`:
scored cases whose GAR is undecided (`n` - `gar_n`)."""
TURN_COUNTS = ["unclosed_reasoning_turns", "ambiguous_turns", "unknown_turns"]
"""Counts of turns, not cases, over the scored cases: `unclosed_reasoning_turns`, the turns
with a kept emission whose rule ends in `UNCLOSED_REASONING`, `ambiguous_turns`, the turns
whose class was decided by a rule holding `AMBIGUOUS` (both 0 under `paper`, which has no such
rule), and `unknown_turns`, the turns with a kept emission of class `unknown` (a per-case row
without a column counts 0)."""
STRUCTURAL = "gar_structural"
"""The published structural reading beside GAR (τ²): the share of scored cases with
`structural_hit`, over the scored cases that have one (`gar_structural_n`; 0 and every rate
null where the benchmark defines none, e.g. BFCL)."""
DECIDABLE = ("gar", "gar_turn", "gar_emission")
"""The rates over the scored cases where their per-case column is decided (`<rate>_n`): the
gold-class rates, which an output the record did not keep can leave undecided (`decided`)."""
OWN_DENOMINATOR: dict[str, str] = {**{rate: RATES[rate] for rate in DECIDABLE},
                                   STRUCTURAL: "structural_hit"}
"""Each rate over its own denominator `<rate>_n` (the scored cases where this per-case column
is not null) and that column; every other rate is over `n`."""
_HITS: dict[str, str] = {**RATES, STRUCTURAL: "structural_hit"}


def _rate_columns(rate: str, label: str, denominator: bool = False) -> list[Column]:
    return [*([Column(f"{rate}_n", "int")] if denominator else []), Column(f"{rate}_k", "int"),
            Column(rate, "float", label), Column(f"{rate}_lo", "float"),
            Column(f"{rate}_hi", "float")]


_STRUCTURAL = _rate_columns(STRUCTURAL, "GAR structural (τ², published)", denominator=True)
STRUCTURAL_COLUMNS = [column.name for column in _STRUCTURAL]
TRIPLES = TableSpec("triples", 3, (
    *(Column(key) for key in KEYS), Column("gold_action", label="gold"),
    *(Column(count, "int", label) for count, label in _COUNTS),
    Column("unclosed_reasoning_turns", "int"), Column("ambiguous_turns", "int", "ambiguous turns"),
    Column("unknown_turns", "int", "unknown turns"),
    *(column for rate, _, label in _RATES
      for column in _rate_columns(rate, label, rate in OWN_DENOMINATOR)),
    *_STRUCTURAL,
))
"""The triples table (`triples.csv` of a run and of every run), its columns labelled as the
report heads them; `<rate>_k` is the numerator of `<rate>`, `<rate>_n` the denominator of a
rate of `OWN_DENOMINATOR` (every other rate's is `n`)."""
TRIPLE_COLUMNS = TRIPLES.names
"""The columns of the triples table, in order."""

Row = Mapping[str, Any]


def gold_rows(cases: Iterable[Any]) -> list[dict[str, Any]]:
    """benchmark, case_id, gold_action, gold_turn of each case (`records.Case`), and its
    further gold classes (`gold_also`, sorted)."""
    return [{"benchmark": c.benchmark, "case_id": c.id, "gold_action": c.gold_action,
             "gold_turn": c.gold_turn, "gold_also": sorted(c.gold_also)} for c in cases]


_case_key = itemgetter(*CASE_KEYS)
_triple_key = itemgetter(*KEYS)


def _group_key(case: Row) -> tuple[Any, ...]:
    return (*_triple_key(case), case["gold_action"] or "")


def _require(rows: Iterable[dict[str, Any]], bad: Callable[[dict[str, Any]], Any],
             what: str) -> None:
    """Raise naming the first cases (in table order) where `bad(row)` holds."""
    hits = sorted((row for row in rows if bad(row)), key=_case_key)
    if hits:
        names = ", ".join(f"{r['benchmark']}/{r['case_id']}" for r in hits[:5])
        raise InputError(f"{len(hits)} case(s) {what}: {names}")


RECORDED = ("recorded_reward", "reward_disagreement")


def recorded_of(score: Mapping[str, Any]) -> dict[str, Any]:
    """A score row's recorded verdict (`RECORDED`, from its `details`; null when the case
    was not imported from a published run)."""
    details = score.get("details") or "{}"
    if isinstance(details, str):
        details = json.loads(details) if "recorded_reward" in details else {}
    return {key: details.get(key) for key in RECORDED}


def case_rows(actions: Iterable[Row], scores: Iterable[Row], golds: Iterable[Row],
              structural: Mapping[tuple[Any, ...], Mapping[str, bool | None]] | None = None
              ) -> list[dict[str, Any]]:
    """Classes emitted, gold hits, tool use and verdict of every case that has turn rows,
    sorted by `CASE_KEYS`.

    `structural`: the benchmark's structural reading of each case's gold classes
    (`Benchmark.structural`), by `CASE_KEYS` tuple; a case or class it lacks has
    `structural_hit` null.

    `emitted` is the union of turn classes (GAR); `emission_classes` the union over every
    emission (the published code's union, where a lower-priority emission of a turn counts too);
    a gold hit that an `unknown` emission could hide is null (`decided`).
    A variant may remap gold classes (no tools visible: tool_call -> refuse), so a case's gold
    is the one its action rows carry at the gold turn. A multi-label case's further gold
    classes (`gold_also`, which no variant remaps) get a row each, id `<case id>#<class>`,
    from the same turns and verdict.
    """
    turns: dict[tuple[Any, ...], dict[str, Any]] = {}
    emissions: dict[tuple[Any, ...], set[str]] = {}
    unclosed: dict[tuple[Any, ...], set[int]] = {}
    unknown: dict[tuple[Any, ...], set[int]] = {}
    ambiguous: dict[tuple[Any, ...], int] = {}
    for row in actions:
        key = _case_key(row)
        if row["level"] == "emission":
            classes = emissions.setdefault(key, set())
            if row["action"] is not None:
                classes.add(row["action"])
            if row["action"] == UNKNOWN:
                unknown.setdefault(key, set()).add(row["turn"])
            if row["rule"].endswith(UNCLOSED_REASONING):
                unclosed.setdefault(key, set()).add(row["turn"])
            continue
        if row["level"] != "turn":
            continue
        if AMBIGUOUS in row["rule"]:
            ambiguous[key] = ambiguous.get(key, 0) + 1
        case = turns.get(key)
        if case is None:
            case = turns[key] = {"outcome": row["outcome"], "run_scored": True,
                                 "classes": set(), "turn_class": {}, "gold_turns": [],
                                 "gold": None, "gold_class": None, "probes_fired": 0}
        case["run_scored"] = case["run_scored"] and row["scored"]
        case["turn_class"][row["turn"]] = row["action"]
        if row["action"] is not None:
            case["classes"].add(row["action"])
        if row["is_gold_turn"]:
            if not case["gold_turns"]:
                case["gold"], case["gold_class"] = row["gold_action"], row["action"]
            case["gold_turns"].append(row["turn"])
        case["probes_fired"] += row["probes_fired"] or 0
    gold_of = {(g["benchmark"], g["case_id"]): g for g in golds}
    score_of = {_case_key(s): s for s in scores}
    cases = []
    for key, case in turns.items():
        gold, score = gold_of.get((key[2], key[4]), {}), score_of.get(key, {})
        cases.append({**dict(zip(CASE_KEYS, key, strict=True)), **case,
                      "case_gold": gold.get("gold_action"), "gold_turn": gold.get("gold_turn"),
                      "gold_also": gold.get("gold_also") or [],
                      "score_scored": score.get("scored"), "passed": score.get("passed"),
                      "error_type": score.get("error_type"), **recorded_of(score)})
    _require(cases, lambda c: c["case_gold"] is None, "have no case (gold) record")
    _require(cases, lambda c: c["gold_turns"] != [c["gold_turn"]],
             "do not mark the case's gold turn, and only it, as their gold turn")
    _require(cases, lambda c: c["score_scored"] is None, "have no score row")
    for c in cases:
        c["scored"] = c["run_scored"] and c["score_scored"]
    _require(cases, lambda c: c["scored"] and c["passed"] is None,
             "are scored without a verdict")
    structural = structural or {}
    rows = []
    for c in sorted(cases, key=_case_key):
        key = _case_key(c)
        hidden = {turn: c["turn_class"].get(turn) or UNKNOWN for turn in unknown.get(key, ())}
        shared = (sorted(emissions.get(key, ())), len(unclosed.get(key, ())),
                  ambiguous.get(key, 0), hidden)
        readings = structural.get(key) or {}
        rows.append(_case_row(c, *shared, readings.get(c["gold"])))
        rows += [_case_row({**c, "gold": extra, "case_id": f"{c['case_id']}#{extra}"}, *shared,
                           readings.get(extra))
                 for extra in c["gold_also"]]
    return sorted(rows, key=_case_key)


def decided(hit: bool, gold: str, turn_classes: Iterable[str]) -> bool | None:
    """`hit`, or None where a miss could be a hit had the record kept every output: the gold
    class is not `tool_call` (an `unknown` output made no structured call) and it outranks
    the class of a turn (of `turn_classes`) that holds an `unknown` emission, so that hidden
    text of the gold class would have been that turn's class."""
    if hit or gold == "tool_call":
        return hit
    return None if any(ACTION_RANK[c] > ACTION_RANK[gold] for c in turn_classes) else False


def _case_row(case: dict[str, Any], emission_list: list[str], unclosed_turns: int,
              ambiguous_turns: int, hidden: dict[int, str],
              structural_hit: bool | None) -> dict[str, Any]:
    """`hidden`: the class of each turn holding an `unknown` emission."""
    emitted_list, gold, gold_class = sorted(case["classes"]), case["gold"], case["gold_class"]
    at_gold_turn = [hidden[case["gold_turn"]]] if case["gold_turn"] in hidden else []
    gold_emitted = decided(gold in emitted_list, gold, hidden.values())
    scored, passed = case["scored"], case["passed"]
    bound = bound_of(scored, passed, gold_emitted)
    return CASES.row({
        "model": case["model"],
        "variant": case["variant"],
        "benchmark": case["benchmark"],
        "category": case["category"],
        "case_id": case["case_id"],
        "gold_action": gold,
        "gold_turn": case["gold_turn"],
        "gold_turn_gold": gold,
        "emitted": "|".join(emitted_list),
        "gold_emitted": gold_emitted,
        "gold_turn_class": gold_class,
        "gold_turn_hit": decided(gold_class == gold, gold, at_gold_turn),
        "tool_call_emitted": "tool_call" in emitted_list,
        "gold_turn_tool_call": gold_class == "tool_call",
        "emission_classes": "|".join(emission_list),
        "gold_emitted_any_step": decided(gold in emission_list, gold,
                                         [UNKNOWN] if UNKNOWN in emission_list else []),
        "passed": passed,
        "scored": scored,
        "outcome": case["outcome"],
        "error_type": case["error_type"],
        "bound": bound,
        "probes_fired": case["probes_fired"],
        "unclosed_reasoning_turns": unclosed_turns,
        "ambiguous_turns": ambiguous_turns,
        "unknown_turns": len(hidden),
        "structural_hit": structural_hit,
        **{key: case[key] for key in RECORDED},
    })


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _rate_values(rate: str, k: int, n: int) -> dict[str, Any]:
    """A rate's columns: denominator, numerator, share and Wilson interval (null when n = 0)."""
    low, high = wilson(k, n)
    return {f"{rate}_n": n, f"{rate}_k": k, rate: _round(k / n) if n else None,
            f"{rate}_lo": _round(low), f"{rate}_hi": _round(high)}


def triple_rows(cases: Iterable[Row]) -> list[dict[str, Any]]:
    """Aggregate per-case rows, sorted by `KEYS`; unscored cases count only in `n_excluded`.

    Every case weighs 1 within its group; groups are never pooled.
    """
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for case in cases:
        key = _group_key(case)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"gold": set(), **dict.fromkeys(COUNTS + TURN_COUNTS, 0),
                                   **{f"{rate}_k": 0 for rate in _HITS},
                                   **{f"{rate}_n": 0 for rate in OWN_DENOMINATOR}}
        scored, outcome = bool(case["scored"]), case["outcome"]
        if case["gold_action"] is not None:
            group["gold"].add(case["gold_action"])
        group["n"] += scored
        group["n_excluded"] += not scored
        group["n_context_overflow"] += outcome == "context_overflow"
        group["n_error"] += outcome == "error"
        group["n_step_cap"] += scored and outcome == "step_cap"
        group["n_probed"] += scored and (case["probes_fired"] or 0) > 0
        group["n_gar_unknown"] += scored and case["gold_emitted"] is None
        if case["bound"] in (ACC_WITHOUT_GOLD, GOLD_WITHOUT_ACC):
            group[case["bound"]] += 1
        if scored:
            for count in TURN_COUNTS:
                group[count] += case.get(count) or 0  # 0 in a table from before the column
            for rate, column in _HITS.items():  # structural_hit: absent in an older table
                group[f"{rate}_k"] += bool(case.get(column))
            for rate, column in OWN_DENOMINATOR.items():
                group[f"{rate}_n"] += case.get(column) is not None
    rows = []
    for key in sorted(groups):
        group = groups[key]
        row = {**dict(zip(KEYS, key[:-1], strict=True)),
               "gold_action": "|".join(sorted(group["gold"])),
               **{count: int(group[count]) for count in COUNTS}}
        row |= {count: int(group[count]) for count in TURN_COUNTS}
        for rate in _HITS:
            row |= _rate_values(rate, int(group[f"{rate}_k"]),
                                int(group.get(f"{rate}_n", row["n"])))
        rows.append({column: row[column] for column in TRIPLE_COLUMNS})
    return rows


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""One encoder for every row (`json.dumps` with options builds one per call)."""
_ENCODE_STR = json.encoder.encode_basestring
"""`_ENCODE` of a string, without the encoder's per-call set-up (`ensure_ascii=False`)."""


def jsonl_bytes(rows: Iterable[Row], columns: Sequence[str]) -> bytes:
    """One JSON object per row, keys in `columns` order (polars reads it with `read_ndjson`):
    bytes equal to encoding each row's dict, but each distinct string is encoded once (a table
    repeats ids, classes and rules on every row), null, booleans and integers are written as
    JSON writes them, and the values fill a per-table line template."""
    line = "{" + ",".join(_ENCODE(column) + ":%s" for column in columns) + "}\n"
    values_of = itemgetter(*columns) if len(columns) > 1 else lambda row: (row[columns[0]],)
    strings: dict[str, str] = {}
    lines = []
    for row in rows:
        texts = []
        for value in values_of(row):
            if type(value) is str:
                text = strings.get(value)
                if text is None:
                    text = strings[value] = _ENCODE_STR(value)
            elif value is None:
                text = "null"
            elif value is True:
                text = "true"
            elif value is False:
                text = "false"
            elif type(value) is int:
                text = int.__repr__(value)
            else:
                text = _ENCODE(value)
            texts.append(text)
        lines.append(line % tuple(texts))
    return "".join(lines).encode()


def _csv_field(value: str | int | float | None) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.{DIGITS}f}"
    if isinstance(value, int):
        return str(value)
    if value == "" or any(char in value for char in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_bytes(rows: Iterable[Row], columns: Sequence[str]) -> bytes:
    """CSV as polars writes it with `float_precision=DIGITS` (null empty, "" quoted)."""
    lines = [",".join(columns)]
    lines += [",".join(_csv_field(row[c]) for c in columns) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")
