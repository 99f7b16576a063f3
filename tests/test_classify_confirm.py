"""The rule-based confirm verdict of one write call: a confirm request naming the call's key
values, then an explicit approval."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from toolcalib.benchmarks.tau2.writes import write_contexts
from toolcalib.classify.confirm import (
    ConfirmVerdict,
    approves,
    confirm_verdict,
    key_values,
    rule_verdict,
)
from toolcalib.classify.default import DefaultProfile
from toolcalib.records import Emission, Message, Step, ToolCall, Trajectory, TurnTrace
from toolcalib.writes import WriteContext, exchange_texts

READER = DefaultProfile()
"""The rule's reader, as every rule profile's (`classify.confirm.Reader`)."""


def confirm_verdict_(*args, **kwargs):
    return confirm_verdict(*args[:3], READER, *args[3:], **kwargs)


def rule_verdict_(context):
    return rule_verdict(context, READER)


def approves_(text):
    return approves(text, READER)

CANCEL = ToolCall(name="cancel_reservation", arguments={"reservation_id": "ZFA04Y"})
EXCHANGE = ToolCall(name="exchange_delivered_order_items", arguments={
    "order_id": "#W2378156", "item_ids": ["1151293680", "4983901480"],
    "new_item_ids": ["7706410293", "7407838442"], "payment_method_id": "paypal_7644869"})
BOOK = ToolCall(name="book_reservation", arguments={
    "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
    "cabin": "economy", "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}],
    "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
    "payment_methods": [{"payment_id": "credit_card_4421568", "amount": 120}],
    "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"})
ADDRESS = ToolCall(name="modify_user_address", arguments={
    "user_id": "yusuf_rossi_9620", "address1": "763 Broadway", "city": "Chicago",
    "country": "USA", "state": "IL", "zip": "60601"})

CANCEL_ASK = "I can cancel reservation ZFA04Y and refund $320 to your card. Shall I go ahead?"
EXCHANGE_ASK = (
    "To confirm: I'll exchange items 1151293680 and 4983901480 of order #W2378156 for items "
    "7706410293 and 7407838442, charging the difference to paypal_7644869. Do you want to "
    "proceed (yes/no)?")
BOOK_ASK = (
    "Here is the booking: flight HAT136 from JFK to SEA on May 20, economy, for Mia Li, "
    "$120 on credit_card_4421568, one free bag, no insurance. Shall I book it?")


@pytest.mark.parametrize(
    ("agent", "user", "call", "rule"),
    [
        (CANCEL_ASK, "Yes, please.", CANCEL, "default:confirm:ok"),
        ("Would you like me to cancel reservation zfa04y?", "yes", CANCEL, "default:confirm:ok"),
        (EXCHANGE_ASK, "Yes, that's correct, proceed.", EXCHANGE, "default:confirm:ok"),
        # the user id (who acts) and non-id values (names, dates, amounts) are not required
        (BOOK_ASK, "Sure, do it.", BOOK, "default:confirm:ok"),
        # '#' optional; ids in backticks or markdown count
        ("Shall I cancel order W2378156 now, refunding to `paypal_7644869`?", "Go ahead.",
         ToolCall(name="cancel_pending_order", arguments={
             "order_id": "#W2378156", "reason": "no longer needed"}), "default:confirm:ok"),
        # no id-like value: one candidate named suffices
        ("Shall I update your address to 763 Broadway, Chicago IL 60601?", "Confirm.", ADDRESS,
         "default:confirm:ok"),
        # no request before the write
        (None, "Yes", CANCEL, "default:confirm:no_request"),
        ("", "Yes", CANCEL, "default:confirm:no_request"),
        ("Could you give me your reservation id?", "ZFA04Y", CANCEL,
         "default:confirm:no_request"),
        ("Your reservation ZFA04Y has been cancelled.", "Thanks", CANCEL,
         "default:confirm:no_request"),
        ("Is there anything else I can help you with?", "Yes, cancel ZFA04Y", CANCEL,
         "default:confirm:no_request"),
        ("I'm sorry, but basic economy reservations like ZFA04Y cannot be cancelled.", "ok",
         CANCEL, "default:confirm:no_request"),
        ("<think>Shall I cancel ZFA04Y?</think>Let me check reservation ZFA04Y.", "yes", CANCEL,
         "default:confirm:no_request"),
        # a request that does not name what will be written
        ("Shall I go ahead with the cancellation?", "Yes", CANCEL,
         "default:confirm:details_missing"),
        ("Shall I cancel reservation ZFA04?", "Yes", CANCEL, "default:confirm:details_missing"),
        ("Shall I cancel reservation XZFA04Y?", "Yes", CANCEL, "default:confirm:details_missing"),
        ("<think>ZFA04Y</think>Shall I go ahead with the cancellation?", "Yes", CANCEL,
         "default:confirm:details_missing"),
        ("To confirm: I'll exchange items 1151293680 and 4983901480 of order #W2378156 for new "
         "ones. Do you want to proceed (yes/no)?", "yes", EXCHANGE,
         "default:confirm:details_missing"),
        ("Shall I update your address?", "Yes", ADDRESS, "default:confirm:details_missing"),
        # the user's reply does not approve
        (CANCEL_ASK, "No.", CANCEL, "default:confirm:not_approved"),
        (CANCEL_ASK, "Wait, what about the refund?", CANCEL, "default:confirm:not_approved"),
        (CANCEL_ASK, "Yes, but first tell me the fee?", CANCEL, "default:confirm:not_approved"),
        (CANCEL_ASK, "What about my other reservation?", CANCEL, "default:confirm:not_approved"),
        (CANCEL_ASK, None, CANCEL, "default:confirm:not_approved"),
        (CANCEL_ASK, "Let me think about it.", CANCEL, "default:confirm:not_approved"),
    ],
)
def test_confirm_verdict(agent: str | None, user: str | None, call: ToolCall, rule: str) -> None:
    verdict = confirm_verdict_(agent, user, call)
    assert (verdict.rule, verdict.confirmed) == (rule, rule == "default:confirm:ok")


def test_evidence() -> None:
    ok = confirm_verdict_(CANCEL_ASK, "Yes", CANCEL)
    assert ok == ConfirmVerdict(True, "default:confirm:ok", "Shall I go ahead?")
    asked = confirm_verdict_("Could you give me your user id?", "yes", CANCEL)
    assert asked.evidence == "default:ask:could_you_tell"
    missing = confirm_verdict_("Shall I exchange the items of #W2378156 (yes/no)?", "yes",
                              EXCHANGE)
    assert missing.evidence == "1151293680, 4983901480, 7706410293, 7407838442, paypal_7644869"
    refused = confirm_verdict_(CANCEL_ASK, "No, keep it.", CANCEL)
    assert refused.evidence == "No, keep it."
    with pytest.raises(dataclasses.FrozenInstanceError):
        ok.confirmed = False  # type: ignore[misc]


def test_key_args_choose_the_required_values() -> None:
    ask = "Shall I book flight HAT136 for you (yes/no)?"
    assert confirm_verdict_(ask, "yes", BOOK).rule == "default:confirm:details_missing"  # payment
    assert confirm_verdict_(ask, "yes", BOOK, key_args=["flight_number"]).confirmed
    assert confirm_verdict_(ask, "yes", BOOK, key_args=["flight_number", "user_id"]).rule == \
        "default:confirm:details_missing"
    # numbers: plain, integral or two-decimal spelling, never inside a longer number
    bag = ToolCall(name="update_baggages", arguments={"total_baggages": 2, "amount": 12.4})
    assert confirm_verdict_("Shall I add 2 bags for $12.40?", "yes", bag,
                           key_args=["total_baggages", "amount"]).confirmed
    assert not confirm_verdict_("Shall I add 22 bags for $12.45?", "yes", bag,
                               key_args=["total_baggages", "amount"]).confirmed


def test_key_values() -> None:
    assert key_values(CANCEL) == (["ZFA04Y"], True)
    assert key_values(EXCHANGE) == (
        ["#W2378156", "1151293680", "4983901480", "7706410293", "7407838442", "paypal_7644869"],
        True)
    assert key_values(BOOK) == (["HAT136", "credit_card_4421568"], True)
    assert key_values(ADDRESS) == (["763 Broadway", "Chicago", "USA", "60601"], False)
    assert key_values(ToolCall(name="reset")) == ([], False)
    assert key_values(BOOK, ["amount", "cabin"]) == (["economy", "120"], True)


@pytest.mark.parametrize(
    "text",
    ["yes", "Yes.", "YES!", "yes please", "Yes, please.", "Go ahead.", "go ahead and cancel it",
     "Confirm", "Confirmed.", "That's correct, proceed.", "That\u2019s right.", "Sure, do it.",
     "Okay", "Ok, go ahead.", "Yep", "Absolutely.", "Please do.", "Proceed with the exchange.",
     "I confirm.", "Sounds good to me.", "Yes, I'd like to proceed.", "Correct.", "y",
     "No problem, go ahead.", "Yes, cancel reservation ZFA04Y."],
)
def test_approves(text: str) -> None:
    assert approves_(text)


@pytest.mark.parametrize(
    "text",
    [None, "", "   ", "no", "No.", "Nope", "No, don't.", "wait", "Wait a second.", "Hold on.",
     "What about the other flight?", "yes, but first tell me the fee?", "Yes, but not today.",
     "Can you do it tomorrow?", "Yes?", "Maybe.", "Hmm, okay.", "I don't want that.",
     "I do not want to proceed.", "Don't proceed.", "Absolutely not.", "Actually, cancel the "
     "other one.", "Yes, and also add insurance.", "Let me think.", "Please cancel it.",
     "Thanks", "Sure, why not?", "Book the other one instead.", "Yes, unless it costs more."],
)
def test_does_not_approve(text: str | None) -> None:
    assert not approves_(text)


REFUND = ToolCall(name="cancel_reservation", arguments={
    "reservation_id": "ZFA04Y", "payment_id": "gift_card_7245904"})


@pytest.mark.parametrize(
    ("agent", "rule"),
    [
        # a request for approval beside a question for information or a refusal is still one
        ("I can cancel reservation ZFA04Y for a full refund. Shall I go ahead? Also, which "
         "email should I send the receipt to?", "default:confirm:ok"),
        ("I'm unable to cancel reservation QX81PL: it is basic economy. I can cancel ZFA04Y "
         "for a full refund, though. Would you like me to do that?", "default:confirm:ok"),
        ("What is the reason for the cancellation? Once I have it, could you tell me your "
         "user id as well?", "default:confirm:no_request"),
        # an agent that answers in JSON is read by its strings
        ('{"summary": "Reservation ZFA04Y can be cancelled.", "next_step": "Reply yes to '
         'confirm the cancellation of ZFA04Y."}', "default:confirm:ok"),
        ('{"status": "cancelled", "reservation_id": "ZFA04Y"}', "default:confirm:no_request"),
        ("{not json}\nShall I cancel ZFA04Y?", "default:confirm:ok"),
    ],
)
def test_approval_request_in_longer_or_json_messages(agent: str, rule: str) -> None:
    assert confirm_verdict_(agent, "Yes.", CANCEL).rule == rule


@pytest.mark.parametrize(
    ("agent", "rule"),
    [
        ("Shall I cancel ZFA04Y and refund your gift card?", "default:confirm:ok"),
        ("Shall I cancel ZFA04Y, refunding the card you paid with?", "default:confirm:ok"),
        ("Shall I cancel ZFA04Y and refund gift_card_7245904?", "default:confirm:ok"),
        ("Shall I cancel ZFA04Y and refund your account?", "default:confirm:details_missing"),
        ("Shall I cancel ZFA04Y and refund you?", "default:confirm:details_missing"),
    ],
)
def test_a_payment_method_is_named_by_its_kind(agent: str, rule: str) -> None:
    assert confirm_verdict_(agent, "Yes.", REFUND).rule == rule


@pytest.mark.parametrize(
    "text",
    ["Yes, go ahead. When will the refund arrive?", "Please proceed. I don't need a receipt.",
     "Yes, book it and do not add insurance.", "Sure, why not.", "Yes.\nInsurance: no",
     "OK, I'll proceed with the cheaper one.", "Thanks for checking. YES - go ahead.",
     "I'd like to go ahead with the change.", "Proceed.\n- Refund to my card, no fees."],
)
def test_approves_despite_later_questions_or_negated_details(text: str) -> None:
    assert approves_(text)


@pytest.mark.parametrize(
    "text",
    ["Yes. Wait, let me check first.", "Go ahead. No!", "Yes, not now.",
     "Yes. Actually, use my other card.", "Will it be refunded? Yes, go ahead.",
     "Sure. I don't want to proceed though.", "Yes. I do not want to proceed.",
     "I'm glad to help, so I can proceed once you tell me more.",
     "If you'd like me to proceed for a refund, just let me know.",
     "You need your order id to proceed.", "Happy to help: proceed (yes/no)."],
)
def test_withheld_or_chatter_approves_nothing(text: str) -> None:
    assert not approves_(text)


# The exchange: details the agent listed to the user earlier, back to the previous write.
LOOKUP = ToolCall(name="get_reservation_details", arguments={"reservation_id": "ZFA04Y"})
OTHER = ToolCall(name="cancel_reservation", arguments={"reservation_id": "NQNU5R"})
LISTED = "Reservation ZFA04Y: JFK to LAX on May 20, economy, refundable. What would you like?"
PROCEED = "Shall I go ahead with the cancellation? Please reply yes to confirm."
WRITES = {"cancel_reservation"}


def user(text: str) -> Message:
    return Message(role="user", content=text)


def agent(text: str = "", *calls: ToolCall) -> Message:
    return Message(role="assistant", content=text, tool_calls=list(calls))


def tool(text: str) -> Message:
    return Message(role="tool", content=text, name="tool")


def context(messages: list[Message], call: ToolCall = CANCEL, reply: str = "Yes."
            ) -> WriteContext:
    """A write right after `reply` to the last agent text of `messages`, as the τ² plugin
    builds it."""
    told = [m.content for m in messages if m.role == "assistant" and not m.tool_calls]
    return WriteContext(call=call, messages=(*messages, user(reply)), agent_text=told[-1],
                        user_reply=reply, exchange=exchange_texts(messages, WRITES))


def test_exchange_texts_are_the_agents_earlier_messages_to_the_user_since_the_last_write(
        ) -> None:
    messages = [user("Hi"), agent("Hello! How can I help?"), user("Cancel NQNU5R."),
                agent("", OTHER), tool("cancelled"), agent("Done. Anything else?"),
                user("My other flight too."), agent("Let me look.", LOOKUP), tool("{...}"),
                agent(LISTED), user("Cancel it, it is refundable."), agent(PROCEED)]
    # oldest first; the request itself, the user's words, tool results and the text beside a
    # tool call (τ²'s user never sees it) are not part of it; the write of NQNU5R closes it
    assert exchange_texts(messages, WRITES) == ("Done. Anything else?", LISTED)
    assert exchange_texts(messages, set()) == ("Hello! How can I help?",
                                               "Done. Anything else?", LISTED)
    assert exchange_texts(messages[:6], WRITES) == ()  # a request right after a write
    assert exchange_texts([user("Hi")], WRITES) == ()
    assert exchange_texts([], WRITES) == ()


@pytest.mark.parametrize(
    ("messages", "rule"),
    [
        # listed earlier in the exchange, then a bare request and a yes: confirmed
        ([user("Cancel my flight."), agent(LISTED), user("Cancel it."), agent(PROCEED)],
         "default:confirm:ok"),
        # the listing two exchanges of messages back still counts (a detail settled between)
        ([agent(LISTED), user("Cancel it."), agent("Which card should the refund go to?"),
          user("My Visa."), agent(PROCEED)], "default:confirm:ok"),
        # listed only before a previous write: that exchange is closed
        ([agent(LISTED), user("Cancel NQNU5R first."), agent("Shall I cancel NQNU5R?"),
          user("Yes."), agent("", OTHER), tool("cancelled"), agent("Done. Anything else?"),
          user("Now the other one."), agent(PROCEED)], "default:confirm:details_missing"),
        # beside a tool call (never shown to τ²'s user), or only in a tool result
        ([user("Cancel my flight."), agent("Found reservation ZFA04Y.", LOOKUP),
          tool("{\"reservation_id\": \"ZFA04Y\"}"), agent(PROCEED)],
         "default:confirm:details_missing"),
        # named only by the user: the agent did not list it
        ([user("Cancel reservation ZFA04Y."), agent("I see it."), user("Cancel it."),
          agent(PROCEED)], "default:confirm:details_missing"),
        # the earlier listing does not replace the request or the yes
        ([agent(PROCEED), user("Yes"), agent(LISTED)], "default:confirm:no_request"),
    ],
)
def test_details_listed_earlier_in_the_exchange(messages: list[Message], rule: str) -> None:
    assert rule_verdict_(context(messages)).rule == rule


def test_the_exchange_still_needs_an_explicit_yes() -> None:
    messages = [agent(LISTED), user("Cancel it."), agent(PROCEED)]
    assert rule_verdict_(context(messages, reply="What is the fee?")).rule == \
        "default:confirm:not_approved"
    missing = rule_verdict_(context(messages, call=OTHER))
    assert (missing.rule, missing.evidence) == ("default:confirm:details_missing", "NQNU5R")
    # without the exchange (an older row, a caller that gives none) the request alone decides
    bare = dataclasses.replace(context(messages), exchange=())
    assert rule_verdict_(bare).rule == "default:confirm:details_missing"


def test_tau2_write_contexts_carry_the_exchange() -> None:
    """The plugin's contexts: each write's exchange runs back to the previous write call."""
    steps = [[Emission(tool_calls=[LOOKUP]), Emission(text=LISTED)],
             [Emission(text=PROCEED)],
             [Emission(tool_calls=[CANCEL]), Emission(text="Done. You also have NQNU5R.")],
             [Emission(text=PROCEED)],
             [Emission(tool_calls=[OTHER]), Emission(tool_calls=[CANCEL])]]
    replies = ["Cancel my flight.", "Cancel it.", "Yes.", "Cancel that one too.", "Yes."]
    messages: list[Message] = []
    turns = []
    for index, (reply, emissions) in enumerate(zip(replies, steps, strict=True)):
        messages.append(user(reply))
        for emission in emissions:
            messages.append(agent(emission.text, *emission.tool_calls))
            messages += [tool("ok") for _ in emission.tool_calls]
        turns.append(TurnTrace(index=index, user=reply, ended="no_call", steps=[
            Step(index=i, emission=e) for i, e in enumerate(emissions)]))
    trajectory = Trajectory(case_id="airline_0", benchmark="tau2", category="airline",
                            model="m", variant="baseline", outcome="completed", turns=turns,
                            messages=messages)
    case = SimpleNamespace(environment={"write_tools": sorted(WRITES)})
    found = [(turn, c.exchange, rule_verdict_(c).rule) for turn, c in
             write_contexts(case, trajectory)]
    assert found == [
        (2, (LISTED,), "default:confirm:ok"),
        (4, ("Done. You also have NQNU5R.",), "default:confirm:ok"),
        # ZFA04Y again: listed only before the write of the first cancellation
        (4, ("Done. You also have NQNU5R.",), "default:confirm:details_missing"),
    ]
