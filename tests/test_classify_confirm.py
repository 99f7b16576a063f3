"""The rule-based confirm verdict of one write call: a confirm request naming the call's key
values, then an explicit approval."""

from __future__ import annotations

import dataclasses

import pytest

from toolcalib.classify.confirm import ConfirmVerdict, approves, confirm_verdict, key_values
from toolcalib.records import ToolCall

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
    verdict = confirm_verdict(agent, user, call)
    assert (verdict.rule, verdict.confirmed) == (rule, rule == "default:confirm:ok")


def test_evidence() -> None:
    ok = confirm_verdict(CANCEL_ASK, "Yes", CANCEL)
    assert ok == ConfirmVerdict(True, "default:confirm:ok", "Shall I go ahead?")
    asked = confirm_verdict("Could you give me your user id?", "yes", CANCEL)
    assert asked.evidence == "default:ask:could_you_tell"
    missing = confirm_verdict("Shall I exchange the items of #W2378156 (yes/no)?", "yes",
                              EXCHANGE)
    assert missing.evidence == "1151293680, 4983901480, 7706410293, 7407838442, paypal_7644869"
    refused = confirm_verdict(CANCEL_ASK, "No, keep it.", CANCEL)
    assert refused.evidence == "No, keep it."
    with pytest.raises(dataclasses.FrozenInstanceError):
        ok.confirmed = False  # type: ignore[misc]


def test_key_args_choose_the_required_values() -> None:
    ask = "Shall I book flight HAT136 for you (yes/no)?"
    assert confirm_verdict(ask, "yes", BOOK).rule == "default:confirm:details_missing"  # payment
    assert confirm_verdict(ask, "yes", BOOK, key_args=["flight_number"]).confirmed
    assert confirm_verdict(ask, "yes", BOOK, key_args=["flight_number", "user_id"]).rule == \
        "default:confirm:details_missing"
    # numbers: plain, integral or two-decimal spelling, never inside a longer number
    bag = ToolCall(name="update_baggages", arguments={"total_baggages": 2, "amount": 12.4})
    assert confirm_verdict("Shall I add 2 bags for $12.40?", "yes", bag,
                           key_args=["total_baggages", "amount"]).confirmed
    assert not confirm_verdict("Shall I add 22 bags for $12.45?", "yes", bag,
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
    assert approves(text)


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
    assert not approves(text)


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
    assert confirm_verdict(agent, "Yes.", CANCEL).rule == rule


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
    assert confirm_verdict(agent, "Yes.", REFUND).rule == rule


@pytest.mark.parametrize(
    "text",
    ["Yes, go ahead. When will the refund arrive?", "Please proceed. I don't need a receipt.",
     "Yes, book it and do not add insurance.", "Sure, why not.", "Yes.\nInsurance: no",
     "OK, I'll proceed with the cheaper one.", "Thanks for checking. YES - go ahead.",
     "I'd like to go ahead with the change.", "Proceed.\n- Refund to my card, no fees."],
)
def test_approves_despite_later_questions_or_negated_details(text: str) -> None:
    assert approves(text)


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
    assert not approves(text)
