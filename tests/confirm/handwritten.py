"""Hand-written write contexts in τ²'s style for the confirm corpus: offers, confirmation
requests with and without the action's id, replies that approve, hesitate, refuse, ask or
change the plan, batch approvals, approvals of another action, reports after the fact. Each is
written as the messages before the write and the write call; the texts the rule reads are
derived as the τ² plugin derives them (`agent_text`: the agent's last message without calls,
the greeting aside; `user_reply`: the user's message after it; `exchange`: the agent's earlier
texts back to the last write, `classify.confirm.exchange_texts`). Unlabelled here: the labels
are written by reading (`tests/confirm/labels.jsonl`), like every other row's.

    python -m tests.confirm.handwritten OUT
"""

from __future__ import annotations

import json
import sys
from typing import Any

from toolcalib.benchmarks.tau2.loop import GREETING
from toolcalib.records import Message, ToolCall
from toolcalib.writes import exchange_texts

WRITES = frozenset({
    "book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
    "update_reservation_flights", "update_reservation_passengers", "cancel_pending_order",
    "exchange_delivered_order_items", "modify_pending_order_address",
    "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
    "return_delivered_order_items"})
"""τ²'s write tools, airline and retail (the release's `write_tools`; a test checks)."""


def u(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def a(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def c(name: str, **arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"name": name, "arguments": arguments}]}


def t(name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "name": name, "content": content}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


ORDER = ('{"order_id": "#W4817420", "user_id": "yusuf_rossi_9620", "status": "delivered", '
         '"items": [{"name": "T-Shirt", "item_id": "4602305039"}, {"name": "Water Bottle", '
         '"item_id": "9408160950"}]}')
PENDING = ('{"order_id": "#W2378156", "user_id": "yusuf_rossi_9620", "status": "pending", '
           '"items": [{"name": "Headphones", "item_id": "4202497723"}]}')
RESERVATION = ('{"reservation_id": "ZFA04Y", "user_id": "mia_li_3668", "origin": "JFK", '
               '"destination": "LAX", "flight_type": "one_way", "cabin": "economy", '
               '"flights": [{"flight_number": "HAT136", "date": "2024-05-20"}]}')
AUTH = [u("Hi, I need help with an order."), a("Sure, could you please give me your email "
        "or your name and zip code so I can find your account?"),
        u("I'm Yusuf Rossi, zip 19122."), c("find_user_id_by_name_zip", first_name="Yusuf",
                                             last_name="Rossi", zip="19122"),
        t("find_user_id_by_name_zip", "yusuf_rossi_9620")]
AIR = [u("Hello, I'm Mia Li, user id mia_li_3668. I want to cancel a flight."),
       c("get_reservation_details", reservation_id="ZFA04Y"),
       t("get_reservation_details", RESERVATION)]
CANCEL_ORDER = call("cancel_pending_order", order_id="#W2378156", reason="no longer needed")
CANCEL_RES = call("cancel_reservation", reservation_id="ZFA04Y")
RETURN = call("return_delivered_order_items", order_id="#W4817420",
              item_ids=["4602305039", "9408160950"], payment_method_id="paypal_5914760")
RETURN_ONE = call("return_delivered_order_items", order_id="#W4817420",
                  item_ids=["4602305039"], payment_method_id="paypal_5914760")
PENDING_LOOKUP = [c("get_order_details", order_id="#W2378156"),
                  t("get_order_details", PENDING)]
ORDER_LOOKUP = [c("get_order_details", order_id="#W4817420"), t("get_order_details", ORDER)]
ADDRESS = call("modify_pending_order_address", order_id="#W2378156", address1="445 Maple Drive",
               address2="Suite 394", city="Fort Worth", state="TX", country="USA", zip="76165")
BAGS = call("update_reservation_baggages", reservation_id="ZFA04Y", total_baggages=2,
            nonfree_baggages=1, payment_id="credit_card_4421")
BOOK = call("book_reservation", user_id="mia_li_3668", origin="JFK", destination="SEA",
            flight_type="one_way", cabin="economy",
            flights=[{"flight_number": "HAT083", "date": "2024-05-24"}],
            passengers=[{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
            payment_methods=[{"payment_id": "credit_card_4421", "amount": 184}],
            total_baggages=0, nonfree_baggages=0, insurance="no")
EXCHANGE = call("exchange_delivered_order_items", order_id="#W4817420", item_ids=["4602305039"],
                new_item_ids=["9612497925"], payment_method_id="paypal_5914760")
ITEMS = call("modify_pending_order_items", order_id="#W2378156", item_ids=["4202497723"],
             new_item_ids=["1906487464"], payment_method_id="credit_card_7815826")
FLIGHTS = call("update_reservation_flights", reservation_id="ZFA04Y", cabin="economy",
               flights=[{"flight_number": "HAT002", "date": "2024-05-22"}],
               payment_id="credit_card_4421")
PASSENGERS = call("update_reservation_passengers", reservation_id="ZFA04Y",
                  passengers=[{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}])
CERTIFICATE = call("send_certificate", user_id="mia_li_3668", amount=100)
USER_ADDRESS = call("modify_user_address", user_id="yusuf_rossi_9620",
                    address1="445 Maple Drive", address2="Suite 394", city="Fort Worth",
                    state="TX", country="USA", zip="76165")

ASK_CANCEL = ("I can cancel order #W2378156 (Headphones) for the reason 'no longer needed'. "
              "The refund goes to your original payment method. Shall I proceed (yes/no)?")
ASK_CANCEL_RES = ("Reservation ZFA04Y (JFK to LAX on 2024-05-20, economy) can be cancelled. "
                  "Would you like me to cancel it?")
ASK_RETURN = ("To confirm: I will return the T-Shirt (4602305039) and the Water Bottle "
              "(9408160950) from order #W4817420, with the refund to paypal_5914760. Do you want "
              "me to proceed?")
BATCH = [*AUTH, *ORDER_LOOKUP,
         a("I can do two things: 1) return the T-Shirt (4602305039) from order #W4817420 to "
           "paypal_5914760, and 2) cancel pending order #W2378156 because it is no longer "
           "needed. Do you confirm both?"), u("Yes to both.")]

CONTEXTS: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    # approvals of a stated action
    ("cancel-order-yes", [*AUTH, u("Cancel my pending order please."), *PENDING_LOOKUP,
                          a(ASK_CANCEL), u("Yes, please.")], CANCEL_ORDER),
    ("cancel-res-go-ahead", [*AIR, a(ASK_CANCEL_RES), u("Yes, go ahead.")], CANCEL_RES),
    ("return-correct-proceed", [*AUTH, u("I want to return two items."), *ORDER_LOOKUP,
                                a(ASK_RETURN), u("Yes, that's correct, please proceed.")],
     RETURN),
    ("return-sounds-good", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN), u("Sounds good, do it.")],
     RETURN),
    ("cancel-okay", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Okay.")], CANCEL_ORDER),
    ("cancel-confirmed", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Confirmed.")],
     CANCEL_ORDER),
    ("cancel-y", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("y")], CANCEL_ORDER),
    ("cancel-please-do", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Please do.")],
     CANCEL_ORDER),
    ("cancel-yes-thanks", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                           u("Yes please! Thank you so much for your help.")], CANCEL_ORDER),
    ("address-yes", [*AUTH, u("My order should go to my new address."), *PENDING_LOOKUP,
                     a("I will change the shipping address of order #W2378156 to 445 Maple "
                       "Drive, Suite 394, Fort Worth, TX 76165, USA. Please confirm (yes/no)."),
                     u("yes")], ADDRESS),
    ("bags-yes-add", [*AIR, a("Adding 2 checked bags to reservation ZFA04Y: 1 is free, 1 costs "
                              "$50, charged to credit_card_4421. Do you want me to proceed?"),
                      u("Yes please add them.")], BAGS),
    ("book-absolutely", [u("I'm mia_li_3668 and I want a one-way flight JFK to Seattle on May "
                           "24."),
                         c("search_direct_flight", origin="JFK", destination="SEA",
                           date="2024-05-24"),
                         t("search_direct_flight", '[{"flight_number": "HAT083", "prices": '
                           '{"economy": 184}}]'),
                         a("I found HAT083 on 2024-05-24, economy, $184, for Mia Li (born "
                           "1990-04-05), paid with credit_card_4421, no bags, no insurance. "
                           "Would you like me to book this flight?"),
                         u("Absolutely, book it.")], BOOK),
    ("exchange-sure", [*AUTH, *ORDER_LOOKUP,
                       a("I can exchange the T-Shirt (item 4602305039) in order #W4817420 for "
                         "the blue XL one (item 9612497925); the price difference is paid with "
                         "paypal_5914760. Shall I go ahead with the exchange?"),
                       u("Sure, why not.")], EXCHANGE),
    ("cancel-res-no-id-route", [*AIR, a("Shall I cancel your one-way economy flight from JFK "
                                        "to LAX on May 20?"), u("Yes.")], CANCEL_RES),
    ("return-no-ids-described", [*AUTH, *ORDER_LOOKUP,
                                 a("Your order has the T-Shirt and the Water Bottle. Do you "
                                   "want me to return both items, with the refund to your "
                                   "PayPal account?"), u("Yes, both.")], RETURN),
    ("cancel-hesitate-then-yes", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                                  u("Hmm, let me think... actually yes, go ahead.")],
     CANCEL_ORDER),
    ("cancel-think-block", [*AUTH, *PENDING_LOOKUP,
                            a("<think>The policy says I must confirm first.</think>Before I "
                              "cancel order #W2378156 (reason: no longer needed), can you "
                              "confirm you want this? (yes/no)"), u("Yes I confirm.")],
     CANCEL_ORDER),
    ("batch-two-returns-1", [*BATCH], RETURN_ONE),
    ("batch-two-returns-2", [*BATCH,
                             {"role": "assistant", "tool_calls": [RETURN_ONE]},
                             t("return_delivered_order_items", '{"status": "return requested"}')],
     CANCEL_ORDER),
    ("cancel-res-i-confirm-long", [*AIR, a(ASK_CANCEL_RES),
                                   u("Yes, I confirm the cancellation of ZFA04Y. My plans "
                                     "changed.")], CANCEL_RES),
    ("cancel-correct", [*AUTH, *PENDING_LOOKUP,
                        a("Just to confirm, you want order #W2378156 cancelled because it is no"
                          " longer needed, is that right?"), u("Correct.")], CANCEL_ORDER),
    ("cancel-go-for-it", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Go for it!")],
     CANCEL_ORDER),
    # no approval of this action
    ("cancel-no", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("No.")], CANCEL_ORDER),
    ("cancel-wait", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Wait, hold on.")], CANCEL_ORDER),
    ("cancel-question", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                         u("Will I get the full refund?")], CANCEL_ORDER),
    ("cancel-question-answered", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                                  u("Will I get the full refund?"),
                                  a("Yes, the full amount goes back to your original payment "
                                    "method within 5-7 business days."),
                                  u("Great, thanks for explaining.")], CANCEL_ORDER),
    ("anything-else-yes", [*AUTH, *PENDING_LOOKUP,
                           a("Your order #W2378156 is pending. Would you like anything else?"),
                           u("Yes.")], CANCEL_ORDER),
    ("offer-no-details", [*AUTH, a("I can help you cancel an order. Would you like to do "
                                   "that?"), u("Yes.")], CANCEL_ORDER),
    ("identity-yes", [u("I want to cancel my order #W2378156, it's no longer needed."),
                      a("Is your user id yusuf_rossi_9620?"), u("Yes, that's right.")],
     CANCEL_ORDER),
    ("ask-id-yes", [*AIR[:1], a("Do you have the reservation number?"), u("Yes, it's ZFA04Y.")],
     CANCEL_RES),
    ("other-action-approved", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Yes, please.")],
     ADDRESS),
    ("other-order-approved", [*AIR,
                              a("Would you like me to cancel reservation NQNU5R (Boston to "
                                "Miami)?"), u("Yes, go ahead.")], CANCEL_RES),
    ("yes-but-change", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                        u("Yes, but change the reason to 'ordered by mistake' first.")],
     CANCEL_ORDER),
    ("changed-payment", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN),
                         u("Please refund it to my credit card instead.")], RETURN),
    ("post-hoc-report", [*AUTH, *PENDING_LOOKUP,
                         a("I have cancelled your order #W2378156. The refund will arrive in "
                           "5-7 business days."), u("Thanks!")], CANCEL_ORDER),
    ("announce-then-act", [*AIR, a("I'll cancel reservation ZFA04Y for you now."),
                           u("Thank you.")], CANCEL_RES),
    ("user-preapproves", [*AUTH, *PENDING_LOOKUP[:0],
                          u("Cancel order #W2378156, no longer needed. Yes I'm sure, just do it "
                            "without asking.")], CANCEL_ORDER),
    ("first-turn-write", [u("Cancel reservation ZFA04Y now, I'm mia_li_3668.")], CANCEL_RES),
    ("not-yet", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                 u("Not yet, first tell me how much I paid.")], CANCEL_ORDER),
    ("dont-want", [*AIR, a(ASK_CANCEL_RES), u("I don't want to proceed with that.")],
     CANCEL_RES),
    ("maybe-later", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Maybe later.")], CANCEL_ORDER),
    ("second-write-unasked", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Yes, please."),
                              {"role": "assistant", "tool_calls": [CANCEL_ORDER]},
                              t("cancel_pending_order", '{"status": "cancelled"}')], ADDRESS),
    ("approved-then-new-request", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN), u("Yes, proceed."),
                                   {"role": "assistant", "tool_calls": [RETURN]},
                                   t("return_delivered_order_items",
                                     '{"status": "return requested"}'),
                                   a("The return is requested. Is there anything else I can "
                                     "help you with?"),
                                   u("Yes, exchange the T-Shirt for the blue XL one.")],
     EXCHANGE),
    ("info-only-reply", [*AUTH, *PENDING_LOOKUP,
                         a("To cancel order #W2378156, may I know the reason: 'no longer "
                           "needed' or 'ordered by mistake'?"), u("No longer needed.")],
     CANCEL_ORDER),
    ("stop-reply", [*AIR, a(ASK_CANCEL_RES), u("Stop, I changed my mind.")], CANCEL_RES),
    ("rhetorical-anything-else", [*AIR, a("I see your reservation ZFA04Y. Anything else you "
                                          "would like to know?"), u("Yes please.")],
     CANCEL_RES),
    ("no-problem-go-ahead", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                             u("No problem, go ahead.")], CANCEL_ORDER),
    ("cancel-res-please-cancel", [*AIR, a(ASK_CANCEL_RES), u("Please cancel it, yes.")],
     CANCEL_RES),
    # more approvals, more tools, more phrasings
    ("items-yes-exactly", [*AUTH, *PENDING_LOOKUP,
                           a("I will change the Headphones (4202497723) in order #W2378156 to "
                             "the wireless version (item 1906487464) and charge the $30 "
                             "difference to credit_card_7815826. Is that OK?"),
                           u("Yes, exactly.")], ITEMS),
    ("flights-ok-go", [*AIR, a("I can move reservation ZFA04Y to flight HAT002 on 2024-05-22, "
                               "economy; the fare difference of $42 is charged to "
                               "credit_card_4421. Shall I make the change?"),
                       u("OK, go ahead with the change.")], FLIGHTS),
    ("passengers-yes-update", [*AIR, a("I'll update the passenger on ZFA04Y to Mia Li, born "
                                       "1990-04-05. Please confirm you want this change."),
                               u("Yes, update it.")], PASSENGERS),
    ("certificate-yes-great", [*AIR, a("Because your flight was delayed, I can send you a $100 "
                                       "travel certificate to user mia_li_3668. Would you "
                                       "like me to send it?"),
                               u("Yes, that would be great.")], CERTIFICATE),
    ("user-address-yes", [*AUTH, a("I'll set your default address to 445 Maple Drive, Suite "
                                   "394, Fort Worth, TX 76165, USA. Do you want me to save "
                                   "it?"), u("Yes, please update my default address.")],
     USER_ADDRESS),
    ("cancel-res-that-is-right", [*AIR, a(ASK_CANCEL_RES), u("That is right, cancel it.")],
     CANCEL_RES),
    ("cancel-yep", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Yep.")], CANCEL_ORDER),
    ("cancel-alright", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Alright, do it.")],
     CANCEL_ORDER),
    ("cancel-yes-exclaim", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("yes!!")], CANCEL_ORDER),
    ("return-i-agree", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN), u("I agree.")], RETURN),
    ("cancel-reasked-after-question", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL),
                                       u("Will I get the full refund?"),
                                       a("Yes, the full $89 goes back to your original "
                                         "payment method. Shall I cancel order #W2378156 "
                                         "now?"), u("Yes, go ahead.")], CANCEL_ORDER),
    ("thanks-then-yes", [*AIR, a(ASK_CANCEL_RES), u("Thank you! Yes, please cancel it.")],
     CANCEL_RES),
    ("cancel-definitely", [*AUTH, *PENDING_LOOKUP, a(ASK_CANCEL), u("Definitely.")],
     CANCEL_ORDER),
    ("return-long-yes", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN),
                         u("Yes, please return both items to my PayPal, that's what I want.")],
     RETURN),
    ("batch-address-and-items-2", [*AUTH, *PENDING_LOOKUP,
                                   a("Two changes to order #W2378156: 1) ship to 445 Maple "
                                     "Drive, Suite 394, Fort Worth, TX 76165, USA; 2) swap the "
                                     "Headphones (4202497723) for item 1906487464, $30 to "
                                     "credit_card_7815826. Do you approve both?"),
                                   u("I approve both."),
                                   {"role": "assistant", "tool_calls": [ADDRESS]},
                                   t("modify_pending_order_address", '{"status": "pending"}')],
     ITEMS),
    ("bags-correct-charge", [*AIR, a("Adding 2 checked bags to reservation ZFA04Y: 1 is free, "
                                     "1 costs $50, charged to credit_card_4421. Do you want "
                                     "me to proceed?"), u("Correct, charge my card.")], BAGS),
    ("exchange-yes-please-do", [*AUTH, *ORDER_LOOKUP,
                                a("I can exchange the T-Shirt (item 4602305039) in order "
                                  "#W4817420 for the blue XL one (item 9612497925); the price "
                                  "difference is paid with paypal_5914760. Shall I go ahead "
                                  "with the exchange?"), u("Yes please do.")], EXCHANGE),
    ("insurance-yes-only", [u("I'm mia_li_3668 and I want a one-way flight JFK to Seattle on "
                              "May 24."),
                            a("Would you like travel insurance for $30 per passenger?"),
                            u("Yes.")], BOOK),
    ("asks-recommendation", [*AUTH, *ORDER_LOOKUP, a(ASK_RETURN),
                             u("I'm not sure, what do you recommend?")], RETURN),
]


def texts(messages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """`agent_text` and `user_reply` as `writes.write_contexts` derives them."""
    agent_at = max((i for i, m in enumerate(messages) if m["role"] == "assistant"
                    and not m.get("tool_calls") and m.get("content") != GREETING), default=None)
    if agent_at is None:
        return None, None
    replies = [m["content"] for m in messages[agent_at + 1:] if m["role"] == "user"]
    return messages[agent_at]["content"], replies[-1] if replies else None


def exchange(messages: list[dict[str, Any]], agent_text: str | None) -> list[str]:
    """`exchange` as `writes.write_contexts` derives it (none without a request)."""
    if agent_text is None:
        return []
    spoken = [Message(role=m["role"], content=m.get("content", ""), name=m.get("name"),
                      tool_calls=[ToolCall(**c) for c in m.get("tool_calls", [])])
              for m in messages]
    return list(exchange_texts(spoken, WRITES))


def rows() -> list[dict[str, Any]]:
    out = []
    for name, messages, write in CONTEXTS:
        agent_text, user_reply = texts(messages)
        out.append({"id": f"handwritten/{name}", "source": {"kind": "handwritten"},
                    "messages": messages[-10:], "call": write, "agent_text": agent_text,
                    "user_reply": user_reply, "exchange": exchange(messages, agent_text),
                    "confirmed": None, "reason": None})
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as handle:
        for row in rows():
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
