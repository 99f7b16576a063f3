"""The context an emission is classified in (`classify.base.Context`): what the model saw at its
turn, built from the case as the variant presents it and from the trajectory; `paper` reads none
of it, `default` reads it where a reader would; every corpus row carries its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_classify_paper import make_case, make_trajectory
from toolcalib.benchmarks import get_benchmark
from toolcalib.benchmarks.bfcl.gold import GoldTrace
from toolcalib.classify import NO_CONTEXT, Context, EmissionAction, Profile, get_profile
from toolcalib.classify.trajectory import action_rows, turn_contexts
from toolcalib.classify.validation import CorpusRow, load_corpus
from toolcalib.evaluate import Category, evaluate
from toolcalib.jsonio import InputError, from_data, write_jsonl
from toolcalib.records import Emission, Message, TurnTrace, docs_json
from toolcalib.variants import get_variant

CORPUS = Path(__file__).parent / "data" / "classifier_corpus.jsonl"
DEFAULT = get_profile("default")
PAPER = get_profile("paper")


def rule(text: str, user: tuple[str, ...] = (), tools: tuple[str, ...] = ()) -> str:
    return DEFAULT.classify(Emission(text=text), Context(user=user, tools=tools)).rule


class Recorder(Profile):
    """Classes every text `other` and keeps the context of each emission it was given."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, Context]] = []

    def classify_text(self, text: str, context: Context) -> EmissionAction:
        self.seen.append((text, context))
        return EmissionAction(action="other", rule="recorder")


def doc(name: str) -> dict[str, Any]:
    return {"name": name, "description": "d", "parameters": {"type": "dict", "properties": {}}}


# -- the record ---------------------------------------------------------------------------------


def test_context_is_a_frozen_record_of_what_was_sent() -> None:
    context = Context(user=("Delete it.",), tools=("rm",))
    with pytest.raises(AttributeError):
        context.user = ()  # type: ignore[misc]
    assert NO_CONTEXT == Context() and hash(context) == hash(Context(("Delete it.",), ("rm",)))
    # whether the emission's text was recorded is the emission's, not the context's
    assert "text_recorded" in Emission.__struct_fields__
    assert set(Context.__struct_fields__) == {"user", "tools"}


def test_corpus_rows_read_a_context_and_nothing_else() -> None:
    base = {"id": "r", "text": "t", "structured_calls": False, "parse": "none",
            "label": "other", "reason": "r", "source": "hand"}
    assert from_data(base, CorpusRow, "row").context == NO_CONTEXT
    row = from_data({**base, "context": {"user": ["u"], "tools": ["f", "g"]}}, CorpusRow, "row")
    assert row.context == Context(user=("u",), tools=("f", "g"))
    with pytest.raises(InputError, match="row: field 'context.gold': .*unknown field"):
        from_data({**base, "context": {"user": [], "gold": "refuse"}}, CorpusRow, "row")


# -- what the classify stage gives ------------------------------------------------------------


def test_turn_contexts_from_the_case_turns_and_the_tools_added_up_to_each() -> None:
    case = make_case(["ask", "tool_call", "refuse"], 1)
    turns = [turn.replace(messages=[Message(role="system", content="sys"),
                                    Message(role="user", content=f"request {turn.index}")])
             for turn in case.turns]
    turns[1] = turns[1].replace(tools_added=[doc("late")])
    case = case.replace(turns=turns, tools_json=docs_json([doc("ls"), doc("cd")]))
    traces = {i: TurnTrace(index=i, steps=[], ended="no_call") for i in (0, 1, 2)}
    assert turn_contexts(case, traces) == {
        0: Context(user=("request 0",), tools=("ls", "cd")),  # the system message is not the user's
        1: Context(user=("request 1",), tools=("ls", "cd", "late")),
        2: Context(user=("request 2",), tools=("ls", "cd", "late")),
    }
    hidden = get_variant("no-tools-visible").adjust_case(case)
    assert {c.tools for c in turn_contexts(hidden, traces).values()} == {()}


def test_a_simulated_users_turn_is_read_from_the_trajectory() -> None:
    """τ²: the case holds no messages; the user's message is the trajectory's, also on the turns
    the simulated user opened beyond the case's."""
    case = make_case(["refuse"], 0).replace(tools_json=docs_json([doc("book")]), open_turns=True)
    traces = {i: TurnTrace(index=i, steps=[], ended="no_call", user=f"said {i}") for i in (0, 3)}
    assert turn_contexts(case, traces) == {0: Context(user=("said 0",), tools=("book",)),
                                           3: Context(user=("said 3",), tools=("book",))}


def test_action_rows_classify_each_emission_in_its_turns_context() -> None:
    case = make_case(["ask", "tool_call"], 1).replace(tools_json=docs_json([doc("ls")]))
    case = case.replace(turns=[turn.replace(messages=[Message(role="user", content=text)])
                               for turn, text in zip(case.turns, ("List it.", "Now here."),
                                                     strict=True)])
    run = make_trajectory([[Emission(text="Which folder?")],
                           [Emission(text="Listing."), Emission(text="Done.")]])
    recorder = Recorder()
    action_rows(run, case, recorder)
    first, second = Context(("List it.",), ("ls",)), Context(("Now here.",), ("ls",))
    assert recorder.seen == [("Which folder?", first), ("Listing.", second), ("Done.", second)]


def test_evaluate_gives_the_context_the_variant_presented(tmp_path: Path,
                                                          bfcl_wheel: Path) -> None:
    """Under a variant that hides tools, the model saw none: the context names none."""
    case = make_case(["refuse"], 0).replace(category="irrelevance", multi_step=False,
                                            tools_json=docs_json([doc("f")]))
    run = make_trajectory([[Emission(text="No tool can do that.")]]).replace(
        category="irrelevance")
    files = {name: str(tmp_path / f"{name}.jsonl") for name in ("cases", "gold", "runs")}
    write_jsonl(files["cases"], [case])
    write_jsonl(files["gold"], [GoldTrace(case_id=case.id, category="irrelevance", turns=[])])
    seen = {}
    for variant in ("baseline", "no-tools-visible"):
        write_jsonl(files["runs"], [run.replace(variant=variant)])
        recorder = Recorder()
        evaluate(recorder, get_benchmark("bfcl"), bfcl_wheel,
                 Category(files["cases"], files["gold"], files["runs"]))
        seen[variant] = recorder.seen
    user = (case.turns[0].messages[0].content,)
    assert seen == {"baseline": [("No tool can do that.", Context(user=user, tools=("f",)))],
                    "no-tools-visible": [("No tool can do that.", Context(user=user))]}


# -- paper: the published classifier, context or not -----------------------------------------


def test_paper_reads_no_context_on_any_corpus_row() -> None:
    """The paper profile's verdict on every corpus row is the same with the row's context, with
    none, and with a context that would change a reader's mind."""
    rows = load_corpus(CORPUS)
    assert sum(row.context != NO_CONTEXT for row in rows) > 1000
    odd = Context(user=("Yes, please proceed.",), tools=("determine_body_mass_index",))
    for row in rows:
        alone = PAPER.classify(row.emission(), NO_CONTEXT)
        assert PAPER.classify(row.emission(), row.context) == alone, row.id
        assert PAPER.classify(row.emission(), odd) == alone, row.id


# -- default: the context where a reader would read it ----------------------------------------


def test_without_a_context_no_context_rule_fires() -> None:
    """Read alone (`NO_CONTEXT`: hand rows, the reference user, the sri-gate probe), the text
    rules decide as they always did: no rule that reads the context fires."""
    context_details = {"after_approval", *DEFAULT.cues["tool_lacks"]}
    for row in load_corpus(CORPUS):
        action = DEFAULT.classify(row.emission(), NO_CONTEXT)
        assert action.rule.split(":")[-1] not in context_details, row.id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The function determine_body_mass_index cannot be used to compute a triangle's area.",
         "default:refuse:tool_cannot"),
        ("`determine_body_mass_index` doesn't support geometry.", "default:refuse:tool_does_not"),
        ("The determine_body_mass_index tool is not relevant to this question.",
         "default:refuse:tool_not_for"),
        ("determine_body_mass_index is for body mass index, not for triangles.",
         "default:refuse:tool_only_for"),
        ("determine_body_mass_index only calculates BMI.", "default:refuse:tool_only_for"),
        ("The available function (determine_body_mass_index) is unrelated.",
         "default:refuse:tool_unrelated"),
        # naming the tool without saying what it lacks, or in a hypothetical clause: no refusal
        ("I will call determine_body_mass_index with 70 kg and 1.8 m.", "default:other:statement"),
        ("If determine_body_mass_index does not support pounds, convert them first.",
         "default:other:statement"),
        # a question stays a question
        ("Is determine_body_mass_index not relevant here?", "default:ask:question"),
    ],
)
def test_a_statement_that_an_offered_tool_lacks_the_request_refuses(text: str,
                                                                    expected: str) -> None:
    tools = ("determine_body_mass_index", "compress_file")
    assert rule(text, ("What is the area of a triangle of base 10 and height 5?",), tools) == \
        expected
    if expected.startswith("default:refuse:tool"):
        # read alone: a statement; about a tool nobody offered too, unless the words name the
        # offered tools ("the function ...", `offered_tool`)
        assert rule(text) == "default:other:statement"
        if not DEFAULT.offered_tool.search(text.lower()):
            assert rule(text, tools=("compress_file",)) == "default:other:statement"


def test_a_tool_named_by_a_plain_word_is_named_as_code_only() -> None:
    tools = ("calculate",)
    assert rule("I can only calculate the fare once you pick a flight.", tools=tools) == \
        "default:other:statement"
    assert rule("The `calculate` tool only computes arithmetic.", tools=tools) == \
        "default:refuse:tool_only_for"
    assert rule("calculate() does not support dates.", tools=tools) == \
        "default:refuse:tool_does_not"


def test_every_tool_lacks_cue_has_an_example() -> None:
    named = {
        "tool_cannot": "f_1 cannot be used for that.",
        "tool_does_not": "f_1 does not handle that.",
        "tool_not_for": "f_1 is not designed for that.",
        "tool_only_for": "f_1 only returns the weather.",
        "tool_unrelated": "f_1 is irrelevant here.",
        "tool_lacks_function": "The question lacks the parameters f_1 needs.",
        "tool_rather_than": "f_1 predicts revenue rather than loss.",
    }
    assert set(named) == set(DEFAULT.cues["tool_lacks"])
    for name, text in named.items():
        assert rule(text, tools=("f_1",)) == f"default:refuse:{name}", name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The available function is for calculating body mass index, not for triangles.",
         "default:refuse:tool_only_for"),
        ("The provided tool is designed to compute BMI, not the area of a triangle.",
         "default:refuse:tool_only_for"),
        ("The given question lacks the parameters required by the function.",
         "default:refuse:tool_lacks_function"),
        # "It" right after a sentence that names the tools speaks of them
        ("The provided tool computes body mass index. It does not have the capability to "
         "measure triangles.", "default:refuse:tool_does_not"),
        # "It" after a sentence about something else, and a tool call mentioned: no refusal
        ("A triangle has three sides. It does not have the capability to fly.",
         "default:other:statement"),
        ("The function calls do not include a triangle tool, I will answer myself: 25.",
         "default:other:statement"),
        # cue version 10
        ("The provided tool may not be suitable for solving equations.",
         "default:refuse:tool_not_for"),
        ("The provided tool deals the cards but does not keep track of hearts.",
         "default:refuse:tool_does_not"),
        ("The provided tool retrieves game results, not player rosters.",
         "default:refuse:tool_rather_than"),
    ],
)
def test_the_available_function_names_the_offered_tools(text: str, expected: str) -> None:
    """`offered_tool`: "the available function", "the provided tools" name what was offered at
    the turn; read alone, or with no tool offered, the same words are a statement."""
    assert rule(text, ("What is the area of a triangle?",), ("determine_bmi",)) == expected
    if "refuse" in expected:
        assert rule(text) == "default:other:statement"


@pytest.mark.parametrize(
    ("user", "text", "expected"),
    [
        # the request serves another action than the one asked for: it offers an alternative
        ("What's the current interest rate?",
         "I can't tell you the current interest rate. I can calculate a mortgage payment for you"
         " if you provide the loan amount and the number of years.",
         "default:refuse:ambiguous:refuse|ask"),
        # ... the one asked for: the value it needs is requested
        ("Can you recommend Italian restaurants near me?",
         "I don't have access to your current location. If you share your city, I can recommend"
         " some Italian restaurants nearby!", "default:ask:unless_you_provide"),
    ],
)
def test_a_request_beside_an_inability_asks_when_it_serves_what_the_user_asked(
        user: str, text: str, expected: str) -> None:
    assert rule(text, (user,), ("calculate_mortgage_payment",)) == expected
    assert rule(text).startswith("default:ask:")  # read alone: a request for a value


@pytest.mark.parametrize(
    ("user", "text", "expected"),
    [
        # the user approved; the action is reported done; the request after it offers more
        ("Yes, please cancel order #W1.",
         "Done: order #W1 has been cancelled. Would you like a copy of the receipt by email?",
         "default:other:after_approval"),
        ("A. Yes.", "Your reservation has been updated successfully. Shall I also email you the"
         " itinerary?", "default:other:after_approval"),
        # ... or asks what the user would like, even about what they mentioned
        ("Yes, cancel #W1. I may return the lamp later.",
         "Order #W1 has been cancelled. If you want to return the lamp too, please tell me its"
         " item id.", "default:other:after_approval"),
        # a request for what the user's message asked is needed: it stays a request
        ("Yes, cancel #W1. I also need to return the lamp from #W2.",
         "Order #W1 has been cancelled. Which lamp should I return from order #W2?",
         "default:ask:wh"),
        # no approval: the same offer is the proposal it reads as
        ("Can you cancel #W1?",
         "Order #W1 has been cancelled. Do you want me to send the receipt to your email?",
         "default:confirm:want_me_to"),
        # approval, but nothing reported done: the request asks
        ("Yes.", "Which lamp should I return?", "default:ask:wh"),
        # an inability is no completion report
        ("Yes, cancel it.", "I cannot cancel it: it has shipped. Would you like to return it"
         " instead?", "default:refuse:ambiguous:refuse|ask"),
    ],
)
def test_after_the_users_approval_a_completion_reports_follow_up_offers(
        user: str, text: str, expected: str) -> None:
    assert rule(text, (user,)) == expected


def test_after_approval_is_read_against_the_last_user_message() -> None:
    text = "Order #W1 has been cancelled. Do you want me to send the receipt to your email?"
    assert rule(text, ("Yes, cancel #W1.",)) == "default:other:after_approval"
    assert rule(text, ("Yes, cancel #W1.", "Wait, can you cancel #W1?")) == \
        "default:confirm:want_me_to"
    assert rule(text) == "default:confirm:want_me_to"


def test_a_texts_class_is_cached_per_context() -> None:
    """The same text in two contexts gets each context's class, in either order."""
    text = "Order #W1 has been cancelled. Do you want me to send the receipt to your email?"
    approved = Context(user=("Yes, cancel #W1.",))
    for first, second in ((approved, NO_CONTEXT), (NO_CONTEXT, approved)):
        fresh = type(DEFAULT)()
        rules = [fresh.classify(Emission(text=text), c).rule for c in (first, second)]
        assert rules == [rule(text, c.user) for c in (first, second)]
    assert DEFAULT.reads(approved) == approved and PAPER.reads(approved) is None


# -- the corpus ---------------------------------------------------------------------------------


def test_every_real_emission_carries_what_its_model_saw() -> None:
    """`model` rows: their turn's user message(s) and the tools offered (none where the variant
    hid them), from the case the provenance names (`tests/support/corpus_contexts.py`); `hand`
    rows: no context (written by hand, nothing was sent); published rows:
    `tests/test_published_turns.py`."""
    rows = load_corpus(CORPUS)
    for row in rows:
        if row.source == "hand":
            assert row.context == NO_CONTEXT, row.id
        elif row.source == "model":
            assert row.provenance is not None
            assert row.context.user and all(row.context.user), row.id
            assert (row.context.tools == ()) == (row.provenance.variant == "no-tools-visible"), \
                row.id
        else:
            assert len(row.context.user) == 1 and row.context.tools, row.id
