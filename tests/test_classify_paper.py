"""Every rule of the `paper` profile, turn priority, and trajectory action rows."""

from __future__ import annotations

import pytest

from toolcalib.classify import (
    EmissionAction,
    classify_trajectory,
    get_profile,
    text_class,
    turn_action,
)
from toolcalib.classify.base import NO_CONTEXT
from toolcalib.classify.paper import load_cues
from toolcalib.jsonio import InputError
from toolcalib.metrics.inputs import ACTION_SCHEMA, actions_frame
from toolcalib.records import (
    NO_DOCS,
    ActionRow,
    Case,
    Emission,
    Message,
    SourceRef,
    Step,
    ToolCall,
    Trajectory,
    Turn,
    TurnTrace,
)

PAPER = get_profile("paper")


def classify(text: str) -> EmissionAction:
    return PAPER.classify(Emission(text=text), NO_CONTEXT)


@pytest.mark.parametrize(
    ("text", "rule", "evidence"),
    [
        # 1. tool-call patterns: three anchored at the start (leading whitespace allowed) ...
        ("[mv(source='a', destination='b')]", "paper:tool_call:python_call_list", "[mv("),
        ("\n  [ ls ()]", "paper:tool_call:python_call_list", "\n  [ ls ("),
        ('[{"name": "ls", "arguments": {}}]', "paper:tool_call:json_name_list", '[{"name":'),
        ("  [ {'name' : 'ls'}]", "paper:tool_call:json_name_list", "  [ {'name' :"),
        (
            '{"name": "cd", "arguments": {"folder": "x"}}',
            "paper:tool_call:single_json_call",
            '{"name": "cd", "arguments":',
        ),
        (
            '{"name": "cd",\n "note": "x",\n "parameters": {}}',
            "paper:tool_call:single_json_call",
            '{"name": "cd",\n "note": "x",\n "parameters":',
        ),
        # ... and the XML tag anywhere, any case.
        ("Calling now <tool_call>{}</tool_call>", "paper:tool_call:xml_tag", "<tool_call"),
        ("I cannot? <TOOL_CALL >", "paper:tool_call:xml_tag", "<TOOL_CALL"),
        # 3. refuse cues on quote-normalised, lower-cased text; evidence as written.
        ("I CANNOT do that.", "paper:refuse:cannot", "CANNOT"),
        ("I can\u2019t do that.", "paper:refuse:can't", "can\u2019t"),
        (
            "I don\u00b4t have access to it.",
            "paper:refuse:don't have access",
            "don\u00b4t have access",
        ),
        ("I don\u02bct have access", "paper:refuse:don't have access", "don\u02bct have access"),
        (
            "I don\u2018t have a tool",
            "paper:refuse:i don't have a tool",
            "I don\u2018t have a tool",
        ),
        ("There is no such function here.", "paper:refuse:no such function", "no such function"),
        # 4. ask: a question mark, or an ask cue.
        ("Which file", "paper:other", ""),
        ("Which file?", "paper:ask:question_mark", "?"),
        ("Could you tell me the name?", "paper:ask:question_mark", "?"),
        ("Please provide the name.", "paper:ask:please provide", "Please provide"),
        ("What\u2019s the path.", "paper:ask:what's the", "What\u2019s the"),
        # 5. confirm cues.
        ("All done.", "paper:confirm:all done", "All done"),
        ("Everything\u2019s in place.", "paper:confirm:everything's", "Everything\u2019s"),
        # 6. other.
        ("Here is the summary.", "paper:other", ""),
        ("Which file\uff1f", "paper:other", ""),  # only the ASCII question mark asks
    ],
)
def test_text_rules(text: str, rule: str, evidence: str) -> None:
    action = classify(text)
    assert (action.rule, action.evidence) == (rule, evidence)
    assert action.action == rule.split(":")[1]


@pytest.mark.parametrize(
    "text",
    [
        'Here you go:\n[{"name": "ls", "arguments": {}}]',
        'Sure.\n{"name": "cd", "arguments": {"folder": "x"}}',
        "Sure: [ls()]",
        '```json\n[{"name": "ls"}]\n```',
        '{"name": "cd", "folder": "x"}',
        "<tool_calls>",
    ],
)
def test_call_patterns_not_in_prose(text: str) -> None:
    """JSON/Python calls count only at the start of the text (multiline does not move `^`)."""
    assert classify(text).action == "other"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("I cannot find it, could you tell me?", "paper:refuse:cannot"),
        ("Are you sure? That is not possible.", "paper:refuse:not possible"),
        ("All done. Anything else?", "paper:ask:question_mark"),
        ("All set; could you confirm.", "paper:ask:could you"),
        ("[cd(folder='x')] I cannot", "paper:tool_call:python_call_list"),
    ],
)
def test_priority_between_families(text: str, rule: str) -> None:
    assert classify(text).rule == rule


@pytest.mark.parametrize("family", ["refuse", "ask", "confirm"])
def test_every_cue_of_each_family(family: str) -> None:
    """Each cue alone decides its family; the rule names the first listed cue inside the text."""
    phrases = load_cues()[family]
    for phrase in phrases:
        first = next(cue for cue in phrases if cue in phrase)
        assert classify(f"Well, {phrase.upper()} now.").rule == f"paper:{family}:{first}", phrase


def test_cue_tables_are_complete() -> None:
    cues = load_cues()
    assert [p["name"] for p in cues["tool_call_patterns"]] == [
        "python_call_list",
        "xml_tag",
        "json_name_list",
        "single_json_call",
    ]
    assert [len(cues[f]) for f in ("refuse", "ask", "confirm")] == [21, 18, 23]
    assert sum(len(chars) for chars in cues["quote_normalisation"].values()) == 10


@pytest.mark.parametrize(
    ("emission", "expected"),
    [
        (
            Emission(
                text="I cannot",
                tool_calls=[ToolCall(name="ls"), ToolCall(name="cd")],
                structured=True,
                parse="ok",
            ),
            EmissionAction(action="tool_call", rule="structured", evidence="ls,cd"),
        ),
        (
            Emission(text="Which one?", structured=True),
            EmissionAction(action="ask", rule="paper:ask:question_mark", evidence="?"),
        ),
        (
            Emission(
                text='```json\n[{"name": "ls"}]\n```', tool_calls=[ToolCall(name="ls")], parse="ok"
            ),
            EmissionAction(action="other", rule="paper:other"),
        ),
        (
            Emission(text='[{"name": "ls", "arguments": {', parse="malformed"),
            EmissionAction(
                action="malformed",
                rule="malformed:paper:tool_call:json_name_list",
                evidence='[{"name":',
            ),
        ),
        (
            Emission(text="Let me run it: ls(", parse="malformed"),
            EmissionAction(action="malformed", rule="malformed:paper:other"),
        ),
        (
            Emission(text=" ", parse="malformed"),
            EmissionAction(action="malformed", rule="malformed:empty"),
        ),
        (Emission(text=""), EmissionAction(action=None, rule="empty")),
        (Emission(text=" \n\t"), EmissionAction(action=None, rule="empty")),
    ],
)
def test_emission_rules(emission: Emission, expected: EmissionAction) -> None:
    assert PAPER.classify(emission, NO_CONTEXT) == expected


@pytest.mark.parametrize(
    ("text", "paper_class"),
    [('[{"name": "ls", "arguments": {', "tool_call"), ("I can't parse ls(", "refuse"), ("", None)],
)
def test_malformed_keeps_the_paper_class(text: str, paper_class: str | None) -> None:
    action = PAPER.classify(Emission(text=text, parse="malformed"), NO_CONTEXT)
    assert action.action == "malformed"
    assert text_class(action) == paper_class
    assert text_class(classify("Which?")) == "ask"


def test_unknown_profile_lists_known_ones() -> None:
    assert get_profile("paper").name == "paper"
    with pytest.raises(InputError, match=r"unknown classifier profile 'papers' \(known: "
                                         r"default, paper\)"):
        get_profile("papers")


def act(action: str | None, rule: str = "r") -> EmissionAction:
    return EmissionAction(action=action, rule=rule)


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        (["other", "confirm", "ask", "refuse"], "refuse"),
        (["confirm", "ask", "other"], "ask"),
        (["other", "confirm"], "confirm"),
        (["refuse", "malformed"], "malformed"),
        (["malformed", "tool_call", "refuse"], "tool_call"),
        ([None, "other", None], "other"),
        ([None, None], None),
        ([], None),
    ],
)
def test_turn_priority(classes: list[str | None], expected: str | None) -> None:
    decided = turn_action(act(c) for c in classes)
    assert (decided.action if decided else None) == expected


def test_turn_takes_the_first_emission_of_the_winning_class() -> None:
    assert turn_action([act("ask", "first"), act("other"), act("ask", "second")]).rule == "first"


def make_case(gold: list[str], gold_turn: int) -> Case:
    source = SourceRef(artifact="a", artifact_sha256="0", file="f", line=1, line_sha256="0")
    turns = [
        Turn(index=i, messages=[Message(role="user", content="q")], gold_action=g)
        for i, g in enumerate(gold)
    ]
    return Case(
        id="c1",
        benchmark="bfcl",
        category="miss_param",
        turns=turns,
        tools_json=NO_DOCS,
        gold_action=gold[gold_turn],
        gold_turn=gold_turn,
        source=source,
    )


def make_trajectory(turns: list[list[Emission]], outcome: str = "completed") -> Trajectory:
    traces = [
        TurnTrace(
            index=i,
            steps=[Step(index=j, emission=e) for j, e in enumerate(emissions)],
            ended="no_call",
        )
        for i, emissions in enumerate(turns)
    ]
    return Trajectory(
        case_id="c1",
        benchmark="bfcl",
        category="miss_param",
        model="m",
        variant="v",
        outcome=outcome,
        turns=traces,
        messages=[],
    )


def test_classify_trajectory_rows() -> None:
    case = make_case(["tool_call", "ask", "tool_call"], gold_turn=1)
    trajectory = make_trajectory(
        [
            [
                Emission(text="[ls()]", tool_calls=[ToolCall(name="ls")], parse="ok"),
                Emission(text="All done."),
            ],
            [Emission(text=""), Emission(text="Which file?")],
        ]
    )
    rows = classify_trajectory(trajectory, case, PAPER)
    got = [(r.level, r.turn, r.step, r.action, r.rule, r.gold_action, r.is_gold_turn) for r in rows]
    assert got == [
        ("emission", 0, 0, "tool_call", "paper:tool_call:python_call_list", "tool_call", False),
        ("emission", 0, 1, "confirm", "paper:confirm:all done", "tool_call", False),
        ("turn", 0, None, "tool_call", "paper:tool_call:python_call_list", "tool_call", False),
        ("emission", 1, 0, None, "empty", "ask", True),
        ("emission", 1, 1, "ask", "paper:ask:question_mark", "ask", True),
        ("turn", 1, None, "ask", "paper:ask:question_mark", "ask", True),
        ("turn", 2, None, None, "unreached", "tool_call", False),
    ]
    assert {(r.case_id, r.model, r.variant, r.benchmark, r.category) for r in rows} == {
        ("c1", "m", "v", "bfcl", "miss_param")
    }
    assert all(r.scored and r.outcome == "completed" for r in rows)
    assert rows[3].evidence == "" and rows[4].evidence == "?"
    frame = actions_frame(rows)
    assert frame.columns == list(ACTION_SCHEMA) == list(ActionRow.__struct_fields__)
    assert frame.height == 7


def test_turn_without_steps_has_no_class() -> None:
    rows = classify_trajectory(make_trajectory([[]]), make_case(["ask"], 0), PAPER)
    assert [(r.level, r.action, r.rule) for r in rows] == [("turn", None, "empty")]


@pytest.mark.parametrize(
    ("outcome", "scored"),
    [("error", False), ("context_overflow", False), ("step_cap", True), ("completed", True)],
)
def test_infrastructure_outcomes_are_not_scored(outcome: str, scored: bool) -> None:
    trajectory = make_trajectory([[Emission(text="[ls()]")]], outcome=outcome)
    rows = classify_trajectory(trajectory, make_case(["tool_call"], 0), PAPER)
    assert [r.scored for r in rows] == [scored, scored]
    assert rows[1].action == "tool_call"


def test_trajectory_must_match_its_case() -> None:
    case = make_case(["ask"], 0)
    with pytest.raises(InputError, match="is not case"):
        classify_trajectory(make_trajectory([[]]).replace(**{"case_id": "c2"}), case, PAPER)
    with pytest.raises(InputError, match=r"turns \[1\] are not in the case"):
        classify_trajectory(make_trajectory([[], []]), case, PAPER)


def test_empty_action_table_keeps_its_schema() -> None:
    assert actions_frame([]).schema == ACTION_SCHEMA
