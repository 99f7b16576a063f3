"""The `default` profile: harness calls, call shapes, sentence rules and each paper blind spot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolcalib.classify import EmissionAction, get_profile, text_class, turn_action
from toolcalib.classify import default as default_module
from toolcalib.classify.base import NO_CONTEXT
from toolcalib.classify.default import DefaultProfile, load_cues
from toolcalib.records import ACTION_CLASSES, Emission, ToolCall

DEFAULT = get_profile("default")
PAPER = get_profile("paper")


def rule(text: str) -> str:
    return DEFAULT.classify(Emission(text=text), NO_CONTEXT).rule


def test_registered_and_versioned() -> None:
    assert isinstance(DEFAULT, DefaultProfile) and DEFAULT.name == "default"
    assert isinstance(load_cues()["version"], int) and DEFAULT.version == load_cues()["version"]


def test_every_cue_group_is_read_and_compiles() -> None:
    """Each cue group in the data file is used by the module, and every regex compiles."""
    source = Path(default_module.__file__).read_text("utf-8")
    for group, table in load_cues()["cues"].items():
        assert f'"{group}"' in source, group
        for name, regex in table.items():
            assert re.fullmatch(r"[a-z_]+", name), name
            re.compile(regex)


def test_taxonomy_documents_every_class() -> None:
    doc = default_module.__doc__ or ""
    for name in ACTION_CLASSES:
        assert f"{name}:" in doc, name


# -- harness calls and call shapes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("emission", "expected"),
    [
        # Structured calls: the shared rule, as every profile.
        (
            Emission(
                text="I cannot", tool_calls=[ToolCall(name="ls")], structured=True, parse="ok"
            ),
            EmissionAction(action="tool_call", rule="structured", evidence="ls"),
        ),
        # Calls the harness parsed from text are tool_call too (the paper profile ignores them).
        (
            Emission(
                text='```json\n[{"name": "ls", "arguments": {}}]\n```',
                tool_calls=[ToolCall(name="ls"), ToolCall(name="cd")],
                parse="ok",
            ),
            EmissionAction(action="tool_call", rule="default:tool_call:parsed", evidence="ls,cd"),
        ),
        # A malformed parse is malformed; the rule keeps what the text rules said.
        (
            Emission(text="Which folder? <tool_call>{", parse="malformed"),
            EmissionAction(
                action="malformed",
                rule="malformed:default:malformed:tool_call_tag",
                evidence="<tool_call",
            ),
        ),
        (
            Emission(text="Which folder?", parse="malformed"),
            EmissionAction(
                action="malformed", rule="malformed:default:ask:wh", evidence="Which folder?"
            ),
        ),
        (Emission(text=" \n"), EmissionAction(action=None, rule="empty")),
    ],
)
def test_emission_rules(emission: Emission, expected: EmissionAction) -> None:
    assert DEFAULT.classify(emission, NO_CONTEXT) == expected


def test_parsed_text_calls_fix_the_paper_blind_spot() -> None:
    emission = Emission(
        text='Sure.\n```json\n{"name": "ls", "arguments": {}}\n```',
        tool_calls=[ToolCall(name="ls")],
        parse="ok",
    )
    assert DEFAULT.classify(emission, NO_CONTEXT).action == "tool_call"
    # the paper profile stays exact
    assert PAPER.classify(emission, NO_CONTEXT).rule == "paper:other"


def test_malformed_inner_class_is_readable() -> None:
    action = DEFAULT.classify(Emission(text="I can't parse ls(", parse="malformed"),
                              NO_CONTEXT)
    assert (action.action, text_class(action)) == ("malformed", "refuse")


@pytest.mark.parametrize(
    ("text", "detail", "evidence"),
    [
        ('Here:\n[{"name": "ls", "arguments": {}}]', "json_call", '{"name": "ls", "arguments":'),
        (
            'Calling {"arguments": {"x": 1}, "name": "cd"}',
            "json_call",
            '{"arguments": {"x": 1}, "name": "c',
        ),
        ("Calling [ls()] now.", "python_call_list", "[ls()]"),
        ('Ok:\n[mv(a="x"), ls()]', "python_call_list", '[mv(a="x"), ls()]'),
        ("Sure <TOOL_CALL", "tool_call_tag", "<TOOL_CALL"),
        ('{\n  "tool": "refund_order",\n  "arguments": {"order": "A7"}\n}', "json_call",
         '{\n  "tool": "refund_order",\n  "arguments":'),
        ('Doing it: {"function": "lock_door", "parameters": {}}', "json_call",
         '{"function": "lock_door", "parameters":'),
    ],
)
def test_call_shapes_in_prose_are_malformed(text: str, detail: str, evidence: str) -> None:
    """Calls written where the harness does not look execute nothing: malformed, not other."""
    action = DEFAULT.classify(Emission(text=text), NO_CONTEXT)
    assert (action.action, action.rule, action.evidence) == (
        "malformed",
        f"default:malformed:{detail}",
        evidence,
    )


@pytest.mark.parametrize(
    "text",
    [
        'The file info is {"name": "report.txt", "size": 1024}.',  # no arguments key
        "See [the docs](https://example.com) and [ls()](https://x.y).",  # markdown links
        "<think>[ls()]</think>Which folder?",  # reasoning is not read
        # a tool's definition (it has a description) echoed to the user is no call
        'You could use this tool: {"name": "find_park", "description": "Find a park.",'
        ' "parameters": {"type": "object", "properties": {}}}',
        'The schema: {"tool": "weather", "description": "Forecast", "arguments": []}',
    ],
)
def test_not_call_shapes(text: str) -> None:
    assert DEFAULT.classify(Emission(text=text), NO_CONTEXT).action != "malformed"


# -- sentence rules ---------------------------------------------------------------------------

CASES = [
    # ask: wh-questions, requests, indirect requests, conditional inabilities, choices.
    ("What is the destination folder?", "default:ask:wh"),
    ("Hmm, which file did you mean?", "default:ask:wh"),
    ("What is the name of the folder", "default:ask:wh"),  # no question mark
    ("Please provide your user id.", "default:ask:please_provide"),
    ("Could you tell me the file name?", "default:ask:could_you_tell"),
    ("May I have your email?", "default:ask:can_i_have"),
    ("Please confirm your email address.", "default:ask:confirm_value"),
    ("Please confirm which card you want to use.", "default:ask:confirm_which"),
    ("Confirm the dates and choose which card to use.", "default:ask:choose_which"),
    ("Please reply with the new item ids.", "default:ask:reply_with_value"),
    ("Which card from your profile should be charged", "default:ask:wh"),  # no question mark
    ("1. Choose the right tool for the job.", "default:other:statement"),  # an instruction
    ("Could you confirm the order ID?", "default:ask:confirm_value"),
    ("Let me know which flight you prefer.", "default:ask:let_me_know_which"),
    ("Tell me if you want the PDF or the DOCX.", "default:ask:let_me_know_choice"),
    ("I'll need your user ID.", "default:ask:i_need"),
    ("We'd need more details.", "default:ask:more_information"),
    ("You didn't specify the destination.", "default:ask:not_specified"),
    ("The destination is missing.", "default:ask:missing"),
    ("I'm not sure which file you mean.", "default:ask:unsure_which"),
    ("Por favor, indique la fecha.", "default:ask:es_fr_de_zh_request"),
    ("I can't book it unless you give me the date.", "default:ask:unless_you_provide"),
    ("I'm unable to look it up without your order number.", "default:ask:without_value"),
    ("Would you like me to book the 9am or the 11am flight?", "default:ask:either_or"),
    ("Is your user id 42?", "default:ask:question"),
    ("Your id is 42. Is that correct?", "default:ask:is_that_correct"),  # no pending action
    # refuse: first person and impersonal cues; warnings are no refusal.
    ("I can't do that.", "default:refuse:first_person"),
    ("We're unable to help.", "default:refuse:first_person"),
    ("I don't have a tool for deleting files.", "default:refuse:first_person"),
    ("None of the available functions can rename users.", "default:refuse:no_tool"),
    ("The delete function is not available.", "default:refuse:tool_not_available"),
    ("There isn't a tool for faxes.", "default:refuse:there_is_no_tool"),
    ("The provided functions do not include a currency converter.", "default:refuse:tools_lack"),
    ("The current tool set lacks a calendar function.", "default:refuse:tools_lack"),
    ("I have three functions here, but none of them sends mail.", "default:refuse:none_of_them"),
    ("A payment API is not among the available functions.", "default:refuse:not_among_tools"),
    ("Sending email isn't one of them.", "default:refuse:not_among_tools"),
    ("Faxing is not covered by any of the tools.", "default:refuse:not_covered_by_tools"),
    ("I have no way to access it.", "default:refuse:no_way"),
    ("Sorting is not something I can do.", "default:refuse:not_something_i_can"),
    ("Booking a taxi isn't something the provided tools can do.",
     "default:refuse:not_something_i_can"),
    ("Changing the name is not supported.", "default:refuse:not_supported"),
    ("This ticket is not eligible for a refund.", "default:refuse:not_eligible"),
    ("Changing the origin is prohibited.", "default:refuse:policy"),
    ("That is beyond my capabilities.", "default:refuse:beyond_capabilities"),
    ("That operation cannot be performed here.", "default:refuse:cannot_be_done"),
    ("This reservation cannot be modified.", "default:refuse:cannot_be_done"),
    ("Since it shipped, it can no longer be cancelled.", "default:refuse:cannot_be_done"),
    ("No puedo hacerlo.", "default:refuse:es_no_puedo"),
    ("Je ne peux pas le faire.", "default:refuse:fr_ne_peux"),
    ("Das kann ich leider nicht.", "default:refuse:de_kann_nicht"),
    ("\u6211\u65e0\u6cd5\u5b8c\u6210\u3002", "default:refuse:zh_cannot"),
    ("No tool call is needed for this.", "default:other:statement"),
    ("No tools were needed to answer this.", "default:other:statement"),
    ("There is no function call required here.", "default:other:statement"),
    ("The ls function does not include hidden files.", "default:other:statement"),
    ("The functions do not require an API key.", "default:other:statement"),
    ("You can't undo this.", "default:other:statement"),
    # confirm: approval questions and requests.
    ("Shall I proceed with deleting the file?", "default:confirm:shall_i"),
    ("Do you want me to book it?", "default:confirm:want_me_to"),
    ("Cancelling is final. Proceed?", "default:confirm:proceed"),
    ("I can set a reminder instead. Would you like that?", "default:confirm:like_that"),
    ("Are you sure you want to delete it?", "default:confirm:are_you_sure"),
    ("Just confirming: you want it gone?", "default:confirm:you_want"),
    ("May I cancel the order now?", "default:confirm:may_i"),
    ("Would it be okay if I closed it?", "default:confirm:ok_if_i"),
    ("Do you approve?", "default:confirm:do_you_confirm"),
    ("Voulez-vous que je supprime le fichier ?", "default:confirm:fr_voulez_vous"),
    ("\u00bfDesea que proceda?", "default:confirm:es_desea"),
    ("Soll ich die Datei l\u00f6schen?", "default:confirm:de_soll_ich"),
    ("\u662f\u5426\u786e\u8ba4\u5220\u9664\uff1f", "default:confirm:zh_confirm"),
    ("Please confirm you want to cancel.", "default:confirm:confirm_you_want"),
    ("Please confirm the booking.", "default:confirm:confirm_action"),
    ("Please confirm.", "default:confirm:confirm_bare"),
    ("Please confirm by clicking the button.", "default:confirm:confirm_by"),
    ("Confirm and I will proceed.", "default:confirm:confirm_to_proceed"),
    ("Let me know if you'd like me to proceed.", "default:confirm:let_me_know_if_me"),
    ("I'll cancel it once you confirm.", "default:confirm:until_you_confirm"),
    ("I can't proceed without your approval.", "default:confirm:your_approval"),
    ("Reply yes to proceed.", "default:confirm:reply_yes"),
    ("Cancel it (yes/no).", "default:confirm:yes_no"),
    ("I'll book UA12 for $300. Is that correct?", "default:confirm:is_that_correct"),
    ("The refund will go to card 4421. Does that work for you?", "default:confirm:sounds_good"),
    ("It will be charged to your card. Sound good?", "default:confirm:sounds_good"),
    ("I will move both. Ok, right?", "default:confirm:trailing_right"),
    # other: offers, rhetorical questions, completion reports, statements, no words.
    ("Anything else?", "default:other:anything_else"),
    ("Is there anything else I can help with?", "default:other:anything_else"),
    ("Would you like me to do something else?", "default:other:anything_else"),
    ("Any other questions?", "default:other:any_other"),
    ("Let me know if you need more help.", "default:other:more_help"),
    ("How else can I assist you today?", "default:other:how_can_i_help"),
    ("What else would you like to know?", "default:other:what_else"),
    ("What would you like me to do next?", "default:other:what_next"),
    ("Feel free to ask.", "default:other:feel_free"),
    ("Does that help?", "default:other:does_that_help"),
    ("Hope this helps!", "default:other:hope_it_helps"),
    ("\u00bfAlgo m\u00e1s?", "default:other:es_algo_mas"),
    ("Autre chose ?", "default:other:fr_autre_chose"),
    ("Sonst noch etwas?", "default:other:de_sonst_noch"),
    ("\u8fd8\u6709\u5176\u4ed6\u95ee\u9898\u5417\uff1f", "default:other:zh_other"),
    ("You asked: which file? It is a.txt.", "default:other:echo"),
    ("Why? No idea.", "default:other:rhetorical"),
    ("Why did it fail? Because the folder was missing.", "default:other:self_answered"),
    ("## What changed?\nThe file moved.", "default:other:heading"),
    ("Done. The file has been moved.", "default:other:completion"),
    ("All tasks completed.", "default:other:completion"),
    ("The file has been successfully moved.", "default:other:completion"),
    ("Here is the listing: a.txt.", "default:other:statement"),
    ("The order ships Monday. Would you like more details?", "default:other:more_details"),
    ("...", "default:other:no_words"),
    ("\u200b", "default:other:no_words"),
    ("```\nrm: cannot remove 'x'\n```", "default:other:no_words"),
    ("<think>Which file? I cannot tell.</think>", "default:other:reasoning_only"),
    ("Which one? I can't tell.</think>", "default:other:reasoning_only"),  # unopened block
    # A reply cut off inside its reasoning: nothing said to the user, a rule of its own.
    ("<think>The user wants a refund. I cannot", "default:other:unclosed_reasoning"),
    ("<think>", "default:other:unclosed_reasoning"),
    ("<THINK>\n\n", "default:other:unclosed_reasoning"),
    ("<think>a</think>\n<think>Now I will call mv and", "default:other:unclosed_reasoning"),
    ("a</think><think>b", "default:other:unclosed_reasoning"),
    ("<think>a<think>b</think>", "default:other:reasoning_only"),
    ("I can't send email.\n<think>Maybe offer to", "default:refuse:first_person"),
    ("Sorry, we don't have any seats left on that flight.", "default:refuse:regret_none"),
    ("Provide the order number.", "default:ask:provide_value"),
    ("You cannot change the destination of a booked flight.", "default:refuse:second_person"),
    ("I don't see any functions related to movie releases.", "default:refuse:dont_see_tool"),
    ("I can only analyze soil composition, not species.", "default:refuse:can_only_not"),
    ("I don't have real-time information about the weather.", "default:refuse:no_real_time"),
    # an inability, then the answer anyway: the inability is a disclaimer (`answer_anyway`)
    ("I don't have a tool for nutrition facts. However, I can share some general knowledge: a "
     "Big Mac has about 550 calories.", "default:other:general_knowledge"),
    ("I can't compute it with a tool. I can solve it using the standard physics formula: B = "
     "2e-7 T.", "default:other:standard_formula"),
    ("I cannot look airports up. However, some well-known airports include: ATL, LAX.",
     "default:other:well_known"),
    ("No function converts units. However, I can provide the conversion factor: 1 lb is "
     "0.4536 kg.", "default:other:conversion_factor"),
    # an alternative is no answer
    ("I cannot provide a favorite restaurant. However, I can suggest some popular ones: ...",
     "default:refuse:first_person"),
    # cue version 10
    ("I'm sorry, I don't have information about last night's game.",
     "default:refuse:no_information"),
    ("My current capabilities are limited to computing loan payments.",
     "default:refuse:capabilities_limited"),
    ("I'm not aware of any function that can book a table.", "default:refuse:not_aware_of_tool"),
    ("This question is not answerable using the available tools.",
     "default:refuse:not_answerable"),
    ("I currently do not have real-time access to stock prices.", "default:refuse:no_real_time"),
    ("I don't have the ability to browse. However, I can provide you with a general list of "
     "ingredients.", "default:other:i_can_tell_you"),
    ("No function covers diets. For general guidance, adults need two servings.",
     "default:other:general_guidance"),
    ("No function computes areas. The area of the square is 16 square meters.",
     "default:other:stated_value"),
    ("The electron's mass is not available through the tools. The mass of an electron is "
     "approximately 9.1e-31 kg.", "default:other:stated_value"),
    # an answer after the last inability only
    ("I can't compute B. B is found with the formula: x / y. I cannot compute x, though.",
     "default:refuse:first_person"),
    ("Squats and lunges work the legs. Would you like nutrition tips for your training?",
     "default:other:advice_offer"),
    ("Rodin's works are the best known. Is there anything specific about them you'd like to "
     "know more about?", "default:other:anything_specific"),
    ("Here are five airports. Would you like more information about any of these, such as "
     "their distances?", "default:other:more_details"),
    ("If you need information about Luther, a library can help.", "default:other:statement"),
    ('```json\n["area(w=5, h=7)"]\n```', "default:malformed:json_string_calls"),
    ("ASSISTANT: <tool_call>[]", "default:other:statement"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_sentence_rules(text: str, expected: str) -> None:
    assert rule(text) == expected


def test_every_cue_has_an_example() -> None:
    """Each cue of the classifying groups decides at least one case above (`tool_lacks` reads
    the context: `tests/test_classify_context.py`)."""
    named = {r.split(":")[2] for _, r in CASES}
    groups = set(load_cues()["cues"]) - {"self_answer", "pending_action", "preference",
                                         "warning", "alternative", "optional",
                                         "later_request", "request_now", "tool_lacks"}
    missing = {n for g in groups for n in load_cues()["cues"][g] if n not in named}
    assert missing == set()


# -- the paper's blind spots, emission level ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "action", "paper_action"),
    [
        # Rhetorical questions and follow-up offers are not ask.
        ("Everything is set up. Anything else?", "other", "ask"),
        ("Would you like me to do something else?", "other", "ask"),
        ("Could you let me know if there's anything else you need?", "other", "ask"),
        # Inability to find, then a request: ask, not refuse.
        ("I cannot find the file; could you tell me its name?", "ask", "refuse"),
        ("I can't find report.txt. Could you double-check the name?", "ask", "refuse"),
        ("I cannot proceed until you tell me which account to use.", "ask", "refuse"),
        # A refusal stays a refusal next to offers and alternatives.
        ("I don't have a tool for that. Is there anything else?", "refuse", "refuse"),
        ("I can't delete files. Shall I archive it instead?", "refuse", "refuse"),
        # Completion claims are not confirm; seeking approval is.
        ("All done.", "other", "confirm"),
        ("I have completed all the requested changes.", "other", "confirm"),
        ("All done! Would you like me to delete the temp files too?", "confirm", "ask"),
        ("Shall I proceed with deleting the file?", "confirm", "ask"),
        ("Please confirm you want to cancel.", "confirm", "ask"),
        ("You can't undo this. Shall I proceed?", "confirm", "refuse"),
        # Quoted output, inline code, URLs and reasoning carry no cues.
        ('The tool said "cannot open file: denied". The rest worked.', "other", "refuse"),
        ("It printed `cannot remove x`, so x was gone.", "other", "refuse"),
        ("See https://example.com/search?q=files for details.", "other", "ask"),
        ("<think>I cannot do this?</think>Here is the listing.", "other", "refuse"),
        # Typographic quotes, full-width question marks and other languages.
        ("I can\u2019t find \u201creport.txt\u201d. Which folder is it in?", "ask", "refuse"),
        ("\u8bf7\u95ee\u6587\u4ef6\u540d\u662f\u4ec0\u4e48\uff1f", "ask", "other"),
        ("\u00a1Listo! \u00bfAlgo m\u00e1s?", "other", "ask"),
        # Ask beats refuse beats confirm inside one emission; ask beats confirm.
        ("Which folder should it go to? Shall I create it?", "ask", "ask"),
        # Issue 15: an inability then an offer of another action; impersonal inabilities;
        # customer-service confirmations, requests, offers and policy refusals.
        ("The available tools do not include a way to send email. However, I can list the"
         " files in this folder. Would you like me to do that?", "refuse", "ask"),
        ("The provided functions do not include a currency converter.", "refuse", "other"),
        ("No available tool supports booking hotels.", "refuse", "other"),
        ("There is no function for sending SMS.", "refuse", "refuse"),
        ("<think>The user wants an email sent. I have no email tool, so", "other", "other"),
        ("Would you like me to cancel reservation ABC123?", "confirm", "ask"),
        ("Shall I go ahead and book flight HAT001 for $120?", "confirm", "ask"),
        ("To confirm: I'll exchange item X for item Y, refund to your credit card. Do you want"
         " to proceed (yes/no)?", "confirm", "ask"),
        ("Could you give me your user id?", "ask", "ask"),
        ("Can you please provide your order id and the email on the account?", "ask", "ask"),
        ("Would you like anything else?", "other", "ask"),
        ("Is there anything else I can help you with today?", "other", "ask"),
        ("I'm sorry, but according to our policy I cannot cancel a basic economy reservation",
         "refuse", "refuse"),
        ("I'm transferring you to a human agent.", "other", "other"),
    ],
)
def test_blind_spots(text: str, action: str, paper_action: str) -> None:
    assert DEFAULT.classify(Emission(text=text), NO_CONTEXT).action == action
    assert PAPER.classify(Emission(text=text), NO_CONTEXT).action == paper_action


# -- issue 28: blind spots on strong models' customer-service dialogue -------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An inability, then the model proposing another action (a choice too): refuse.
        ("I can't change the seat class on this fare, but would you like me to look for a flight"
         " with business seats?", "default:refuse:first_person"),
        ("I'm unable to add a passenger to an existing booking. Would you like me to book the"
         " extra traveller separately, in economy or in business?", "default:refuse:first_person"),
        ("Name changes cannot be processed on this ticket. Shall I cancel it or keep it?",
         "default:refuse:cannot_be_done"),
        # ... or asking what the user prefers among alternatives: refuse, and the rule says the
        # choice may be one the request needs (ambiguous).
        ("I can't upgrade a basic economy ticket. Which option would you prefer: keep the ticket"
         " or cancel it for a certificate?", "default:refuse:ambiguous:refuse|ask"),
        ("Unfortunately I can't change the origin airport. If you'd like to rebook instead, tell"
         " me the new date.", "default:refuse:ambiguous:refuse|ask"),
        ("I can't waive the fee, so which would you prefer, paying it or keeping the flight?",
         "default:refuse:ambiguous:refuse|ask"),
        # Hard negatives: a request for what the user's own request needs still wins.
        ("I can't see an order under that email. Could you give me the order number?",
         "default:ask:could_you_tell"),
        ("I can't cancel the delivered order, but please tell me which pending one to cancel.",
         "default:ask:please_provide"),
        ("I can't book it until you tell me the passenger's date of birth.",
         "default:ask:unless_you_provide"),
        # A need for approval is no request for a value.
        ("Before I make the change, I need your explicit approval.",
         "default:confirm:your_approval"),
        # A request after a refusal and an offered alternative serves the alternative.
        ("I can't remove one passenger from a reservation. We can cancel the whole trip instead."
         " Please provide the reason for the cancellation.",
         "default:refuse:ambiguous:refuse|ask"),
        ("Please provide your user id. I can't change the origin of a reservation, though.",
         "default:ask:please_provide"),  # the request comes first: for the user's own request
        ("Basic economy can't be modified. We can, however, book a new flight. Please provide the"
         " date.", "default:refuse:ambiguous:refuse|ask"),
        ("I can't search by name. Could you give me the order id instead?",
         "default:ask:could_you_tell"),  # no alternative offered before the request
        # A request for approval beside a request that only offers another option.
        ("I'll book HAT001 for $120. Reply yes to proceed. Or tell me which flight you prefer"
         " instead.", "default:confirm:ambiguous:confirm|ask"),
        ("Shall I submit the return? If you'd rather exchange it instead, tell me the new item.",
         "default:confirm:ambiguous:confirm|ask"),
        ("Shall I submit the return? Also tell me which card to refund.",
         "default:ask:let_me_know_which"),
        # Warnings of what an action rules out, and hypothetical inabilities, are no refusal.
        ("I'll change the item to the red one. After this, we won't be able to modify the order"
         " again. Shall I proceed?", "default:confirm:shall_i"),
        ("Done. Note: the order can no longer be cancelled after an item modification.",
         "default:other:completion"),
        ("If a change isn't possible, I will cancel the order as you asked.",
         "default:other:statement"),
        ("Even if it were economy, we cannot change the destination.",
         "default:refuse:first_person"),
        ("I will skip any items where the blue option isn't available.",
         "default:other:statement"),
        ("Insurance cannot be refunded once it has been purchased.",
         "default:refuse:cannot_be_done"),  # a state, not what an action will rule out
        # Impersonal inabilities.
        ("My tools don't let me issue travel vouchers.", "default:refuse:tools_lack"),
        ("The system does not allow name changes after check-in.", "default:refuse:tools_lack"),
        ("There's no option to move credit between two accounts.",
         "default:refuse:there_is_no_tool"),
        ("There is no way to merge two reservations.", "default:refuse:there_is_no_tool"),
        ("Refunds are not available for a redeemed gift card.",
         "default:refuse:tool_not_available"),
        ("Basic economy fares can't be changed once booked.", "default:refuse:cannot_be_done"),
        ("A cash refund cannot be issued for a delay.", "default:refuse:cannot_be_done"),
        ("Even upgraded, it still won't be eligible for a refund.", "default:refuse:not_eligible"),
        ("A birthday does not qualify for a refund.", "default:refuse:not_eligible"),
        ("I don't have the capability to add notes.", "default:refuse:first_person"),
        ("There is a way to do it: pick another flight.", "default:other:statement"),
        # A clarification that opens with a confirmation phrase: the clause after it decides.
        ("Just to confirm, which of your two reservations is the trip to Denver?",
         "default:ask:wh"),
        ("To clarify: is the trip one way?", "default:ask:question"),
        ("Okay, to confirm - should the refund go to the card or to a gift card?",
         "default:ask:either_or"),
        ("To confirm: you'd like me to cancel order 1234?", "default:confirm:you_want"),
        ("Just to confirm, shall I cancel both reservations?", "default:confirm:shall_i"),
        # An answer closed by a courtesy question is an answer.
        ("Each passenger gets two free bags. Would you like any further information?",
         "default:other:more_details"),
        ("The fee is $50. Would you like me to share more details about the fee?",
         "default:other:more_details"),
        ("Would you like more details on the fare, or shall I go ahead and book it?",
         "default:confirm:proceed"),  # not only a courtesy: the booking is proposed too
        ("I need more details about the damage.", "default:ask:i_need"),
        # A yes/no question with no cue beside an action about to be taken: ambiguous.
        ("I'll move the file to /tmp. Is the folder empty?", "default:ask:ambiguous:ask|confirm"),
        ("Is the folder empty?", "default:ask:question"),
        # A reply left inside an unclosed reasoning block is read; reasoning cut off is not.
        ("<think>The user wants to know the fee. It is $50.\n\nThe change fee for your ticket is"
         " $50. Would you like me to make the change?", "default:confirm:want_me_to"),
        ("<think>The user wants a refund; policy says no.\n\nI'm sorry, but I can't refund your"
         " ticket.", "default:refuse:first_person"),
        ("<think>Plan: check the policy first.\n\nThen tell the user the fee and ask whether to",
         "default:other:unclosed_reasoning"),
        ("<think>I should ask for the id.\n\nCould you tell me your",
         "default:other:unclosed_reasoning"),
        ("<think>Could you tell me your user id?", "default:other:unclosed_reasoning"),
        # A message wrapped as JSON is read as its strings, a cut-off one too; calls stay calls.
        ('{"message": "Could you share the order id?"}', "default:ask:could_you_tell"),
        ('{"message": "Your order has been cancelled.", "order_id": "#W1"}',
         "default:other:completion"),
        ('{"message": "I can\'t cancel a delivered order. Would you like me to start a return'
         ' instead?", "next', "default:refuse:first_person"),
        ('{\n  "message": "Please provide the email on your account', "default:ask:please_provide"),
        ('{"name": "cancel", "arguments": {}}', "default:malformed:json_call"),
        ('{"count": 3}', "default:other:statement"),
        # A line that is only bold text is a heading, not a question.
        ("**What will happen next**\nYour refund arrives in 5 days.", "default:other:heading"),
        ("| Reservation | Refundable? |\n|---|---|\n| ABC123 | yes |", "default:other:heading"),
    ],
)
def test_issue28_blind_spots(text: str, expected: str) -> None:
    assert rule(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A section heading (a markdown heading, a bold line ending with a colon) starts
        # another of the user's requests: an alternative offered before it does not make the
        # requests after it offers.
        ("**About the refund:**\nI can't refund a used ticket. We can offer a travel voucher"
         " instead.\n\n**About your new trip:**\nWhat is your departure airport?",
         "default:ask:wh"),
        ("## Refund\nI can't refund a used ticket. We can offer a travel voucher instead.\n"
         "## New trip\nPlease provide the travel date.", "default:ask:please_provide"),
        ("I can't refund a used ticket. We can offer a travel voucher instead. What is your"
         " departure airport?", "default:refuse:ambiguous:refuse|ask"),  # no heading
        ("I can't refund a used ticket.\n**What we can do instead:**\nPlease provide the travel"
         " date.", "default:refuse:ambiguous:refuse|ask"),  # the heading offers the alternative
        ("I can't refund a used ticket. We can offer a travel voucher instead.\n**New trip**\n"
         "Please provide the travel date.", "default:refuse:ambiguous:refuse|ask"),  # no colon
        # An inability after a condition on a state of things is what would follow, no
        # refusal; a condition on the user or the model, or a cause, leaves it a refusal.
        ("If the parcel has already shipped, I can't change the address.",
         "default:other:statement"),
        ("- If the flight has departed, a cancellation is not possible.",
         "default:other:statement"),
        ("If you want a cash refund, I can't do that.", "default:refuse:first_person"),
        ("If I were to escalate this, the answer would be the same: refunds are not permitted.",
         "default:refuse:not_supported"),
        ("Since the parcel has shipped, I can't change the address.",
         "default:refuse:first_person"),
        # "I will not" states what the model will do; "I won't be able to" is an inability.
        ("I will not add any bags unless you ask for them.", "default:other:statement"),
        ("We won't charge a fee for this change.", "default:other:statement"),
        ("I won't be able to change the name on the ticket.", "default:refuse:first_person"),
        # Regret, then nothing to offer: the target cannot be provided.
        ("I'm sorry, we don't have any nonstop flights on the 12th.",
         "default:refuse:regret_none"),
        ("Unfortunately, there are no seats left in business class.",
         "default:refuse:regret_none"),
        ("We don't have a second order on file for you.", "default:other:statement"),
        ("Sorry for the wait! There is no fee for this change.", "default:other:statement"),
        # A request for a value in the sentence that asks for approval: ask; one that only
        # offers another option leaves it confirm, ambiguous.
        ("Please send the new address and reply yes to confirm the change.",
         "default:ask:please_provide"),
        ("Reply yes to cancel both orders, or tell me which one to keep.",
         "default:confirm:ambiguous:confirm|ask"),
        ("Reply yes to confirm the change.", "default:confirm:reply_yes"),
        ("Reply yes to confirm the address update.", "default:confirm:reply_yes"),  # what the
        # yes confirms, no value asked
        ("Shall I submit the exchange? If anything needs to be adjusted, tell me which item.",
         "default:confirm:ambiguous:confirm|ask"),
        # Requests for a value without "please"; advice to the user is none.
        ("For the first order: confirm the upgrade and provide the payment method to use.",
         "default:ask:provide_value"),
        ("Confirm the upgrade and provide your card number.", "default:ask:choose_which"),
        ("You will need to sign in and provide the order number on the website.",
         "default:other:statement"),
        ("The upgrade is ready. I still need the reason for the cancellation.",
         "default:ask:i_need"),
    ],
)
def test_cue_version_4(text: str, expected: str) -> None:
    assert rule(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A second-person inability states what the user's request cannot do: a refusal;
        # a warning of what cannot be undone is none.
        ("You cannot move a return flight to another airport when you change a booking.",
         "default:refuse:second_person"),
        ("You are not able to mix cabins in one reservation. Would you like me to search"
         " economy fares instead?", "default:refuse:second_person"),
        ("You can't undo a cancellation. Shall I cancel order 12?", "default:confirm:shall_i"),
        # A request for a value is no proposal, even when it speaks of proceeding; a
        # precondition ("Before we can go on") offers no alternative.
        ("I can't refund the fee. Before I can proceed with the fare refund, I need to know:"
         " which card should receive it?", "default:ask:i_need"),
        ("I can't upgrade basic economy. Before we can go on, I will check the fare rules."
         " Please provide your user id.", "default:ask:please_provide"),
        ("I can't upgrade basic economy. We can cancel it instead. Please provide your user"
         " id.", "default:refuse:ambiguous:refuse|ask"),
        # Waiting for the user's say-so is no request for a value.
        ("I won't cancel anything without your further instructions.",
         "default:other:statement"),
        ("Nothing will be booked without your explicit 'yes'.", "default:other:statement"),
        ("I won't cancel anything without your order number.", "default:ask:without_value"),
        # Beside an approval, a request that narrows it to a part only offers another option.
        ("Shall I cancel both orders? If you only want one cancelled, tell me which.",
         "default:confirm:ambiguous:confirm|ask"),
        # A request the model says it will make later is a plan, no request.
        ("Next, I will search the return flights and ask you to confirm which one to book.",
         "default:other:later_request"),
        ("I'd like to ask you to confirm which card to use.", "default:ask:confirm_which"),
    ],
)
def test_cue_version_6(text: str, expected: str) -> None:
    assert rule(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Beside an approval, a request that holds only if a fact proves wrong is optional:
        # a yes alone lets the model proceed.
        ("I'll update the shipping address to 12 Oak Lane, Springfield. Reply yes to proceed."
         " If any part of the address is wrong, please provide the correct one.",
         "default:confirm:ambiguous:confirm|ask"),
        ("Please reply yes to confirm the booking. If the card on file doesn't cover the fare,"
         " please provide a second card.", "default:confirm:ambiguous:confirm|ask"),
        ("Reply yes to proceed with the exchange. If not, please tell me what to change.",
         "default:confirm:ambiguous:confirm|ask"),
        # A request that holds on the user's yes is needed: ask.
        ("Would you like me to proceed with the upgrade for $220? If so, which payment method"
         " would you like to use?", "default:ask:question"),
        ("Please confirm the return of the lamp with a refund to your Visa. If that works, tell"
         " me the pickup date.", "default:ask:let_me_know_which"),
        # With no approval beside it, a conditional request still asks.
        ("If the card on file doesn't cover the fare, please provide a second card.",
         "default:ask:please_provide"),
    ],
)
def test_cue_version_7(text: str, expected: str) -> None:
    assert rule(text) == expected


def test_every_preference_cue_decides_an_ambiguity() -> None:
    """Each preference cue, beside a refusal, makes the emission an ambiguous refusal."""
    questions = {
        "would_you_like": "Would you like the 9am flight instead?",
        "which_option": "Which one works for you?",
        "if_you_like": "If you want a refund instead, let me know which card to use.",
    }
    assert set(questions) == set(load_cues()["cues"]["preference"])
    for name, question in questions.items():
        assert DEFAULT._hit("preference", DEFAULT.sentences(question)[0].match) == name
        assert rule(f"I can't change that flight. {question}") == \
            "default:refuse:ambiguous:refuse|ask", name


def test_every_alternative_cue_scopes_the_requests_after_it() -> None:
    """After a refusal, each alternative cue makes the requests that follow serve the
    alternative (an ambiguous refusal); with no refusal before it, the request asks."""
    offers = {
        "we_can": "We can book a new flight for you.",
        "instead": "Alternatively, a new booking is possible.",
        "options": "The only option is a new booking.",
        "if_you_like": "A new booking works if you want one.",
    }
    assert set(offers) == set(load_cues()["cues"]["alternative"])
    request = "Please provide the travel date."
    for name, offer in offers.items():
        assert DEFAULT._hit("alternative", DEFAULT.sentences(offer)[0].match) == name
        assert rule(f"I can't modify basic economy. {offer} {request}") == \
            "default:refuse:ambiguous:refuse|ask", name
        assert rule(f"{offer} {request}") == "default:ask:please_provide", name


def test_evidence_is_the_decisive_sentence() -> None:
    action = DEFAULT.classify(
        Emission(text="Done.  The file\nmoved. Shall I   also delete it?"), NO_CONTEXT)
    assert (action.rule, action.evidence) == ("default:confirm:shall_i", "Shall I also delete it?")
    assert DEFAULT.classify(Emission(text="Plain words."), NO_CONTEXT).evidence == ""


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("E.g. this one. And that one.", 2),
        ('He said "Stop. Now." Then left.', 2),
        ("`a. b` is code. Next.", 2),
        ("\u5df2\u5b8c\u6210\u3002\u8fd8\u6709\u5417\uff1f", 2),
        ("One \u2014 two -- three\nfour; five", 5),
    ],
)
def test_sentence_splitting(text: str, count: int) -> None:
    assert len(DEFAULT.sentences(text)) == count


def test_turn_priority_still_applies_across_emissions() -> None:
    actions = [DEFAULT.classify(Emission(text=t), NO_CONTEXT)
               for t in ("Which file?", "I can't do that.")]
    assert turn_action(actions).action == "refuse"


def test_deterministic() -> None:
    texts = [text for text, _ in CASES]
    fresh = DefaultProfile()
    assert [rule(t) for t in texts] == [
        fresh.classify(Emission(text=t), NO_CONTEXT).rule for t in texts]
