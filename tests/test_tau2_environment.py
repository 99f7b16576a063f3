"""τ²'s environment built by toolcalib: τ²'s tools, errors and hashes, a fresh state per task."""

from __future__ import annotations

import copy
import json

import pytest

from toolcalib.benchmarks.tau2.environment import (
    Tau2Environment,
    tool_call_model,
    tool_schemas,
    write_tools,
)
from toolcalib.jsonio import InputError
from toolcalib.records import ToolCall

WRITE_TOOLS = {
    "airline": {"book_reservation", "cancel_reservation", "send_certificate",
                "update_reservation_baggages", "update_reservation_flights",
                "update_reservation_passengers"},
    "retail": {"cancel_pending_order", "exchange_delivered_order_items",
               "modify_pending_order_address", "modify_pending_order_items",
               "modify_pending_order_payment", "modify_user_address",
               "return_delivered_order_items"},
}
TOOL_COUNTS = {"airline": 14, "retail": 15}


@pytest.fixture(scope="module")
def airline(tau2_release):
    return Tau2Environment(tau2_release, "airline")


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_tool_schemas_and_write_tools(tau2_release, domain):
    env = Tau2Environment(tau2_release, domain)
    tools = env.tools()
    assert len(tools) == TOOL_COUNTS[domain] == len({t["name"] for t in tools})
    for tool in tools:
        assert set(tool) == {"name", "description", "parameters"}
        assert tool["description"] and tool["parameters"]["type"] == "object"
        assert set(tool["parameters"].get("required", [])) <= set(tool["parameters"]["properties"])
    assert env.write_tools() == WRITE_TOOLS[domain] == write_tools(tau2_release, domain)
    assert WRITE_TOOLS[domain] < {t["name"] for t in tools}
    tools[0]["name"] = "changed"
    assert tool_schemas(tau2_release, domain)[0]["name"] != "changed"  # a fresh copy


def test_a_schema_is_taus_own(airline):
    """The agent sees what τ²'s agent sends: `Tool.openai_schema`'s function, unchanged."""
    tool = next(t for t in airline.tools() if t["name"] == "get_user_details")
    assert tool == {
        "name": "get_user_details", "description": "Get the details of a user, including their "
        "reservations.",
        "parameters": {"properties": {"user_id": {
            "description": "The user ID, such as 'sara_doe_496'.", "title": "User Id",
            "type": "string"}}, "required": ["user_id"], "title": "parameters",
            "type": "object"}}


@pytest.mark.parametrize(("call", "message"), [
    (ToolCall(name="delete_everything"), "Error: Tool 'delete_everything' not found."),
    (ToolCall(name="get_user_details", arguments={"uid": "x"}),
     "Error: AirlineTools.get_user_details() got an unexpected keyword argument 'uid'"),
    (ToolCall(name="get_user_details"),
     "Error: AirlineTools.get_user_details() missing 1 required positional argument: "
     "'user_id'"),
    (ToolCall(name="get_user_details", arguments={"user_id": 7}), "Error: User 7 not found"),
    (ToolCall(name="get_user_details", arguments={"user_id": "mia_li_3668", "requestor": "x"}),
     "Error: tau2.environment.environment.Environment.make_tool_call() got multiple values "
     "for keyword argument 'requestor'"),
    (ToolCall(name="calculate", arguments={"expression": "__import__('os')"}),
     "Error: Invalid characters in expression"),
])
def test_bad_calls_get_taus_tool_error(airline, call, message):
    assert airline.execute(call) == (message, True)
    tau2_env = airline.tau2_environment  # τ²'s own Environment answers the same
    answer = tau2_env.get_response(tool_call_model(airline.release, call))
    assert (answer.content, answer.error) == (message, True)


def test_user_calls_have_no_tools(airline):
    call = ToolCall(name="get_user_details", arguments={"user_id": "mia_li_3668"})
    assert airline.execute(call, requestor="user") == ("Error: User tools not available", True)
    content, error = airline.execute(call)
    assert not error and json.loads(content)["user_id"] == "mia_li_3668"
    assert airline.user_db_hash() is None


def test_environments_are_fresh_and_do_not_keep_arguments(tau2_release):
    task, action = next((t, a) for t in tau2_release.tasks("airline")
                        for a in t["evaluation_criteria"]["actions"]
                        if a["name"] == "book_reservation")
    first, second = (Tau2Environment(tau2_release, "airline", task) for _ in range(2))
    initial = first.db_hash()
    call = ToolCall(name="book_reservation", arguments=copy.deepcopy(action["arguments"]))
    content, error = first.execute(call)
    assert not error and json.loads(content)["reservation_id"] == "HATHAT"
    assert first.db_hash() != initial == second.db_hash()
    assert call.arguments == action["arguments"]
    reservation = json.loads(first.execute(ToolCall(name="get_reservation_details", arguments={
        "reservation_id": "HATHAT"}))[0])
    call.arguments["passengers"][0]["first_name"] = "Changed"
    assert json.loads(first.execute(ToolCall(name="get_reservation_details", arguments={
        "reservation_id": "HATHAT"}))[0]) == reservation


def test_initial_state_is_applied_as_tau2_does(tau2_release):
    task = copy.deepcopy(tau2_release.tasks("airline")[0])
    assert task["initial_state"] is None  # no task of this release has one
    task["initial_state"] = {"initialization_data": {"agent_data": {
        "users": {"mia_li_3668": {"membership": "regular"}}}}}
    env = Tau2Environment(tau2_release, "airline", task)
    call = ToolCall(name="get_user_details", arguments={"user_id": "mia_li_3668"})
    assert json.loads(env.execute(call)[0])["membership"] == "regular"
    assert json.loads(Tau2Environment(tau2_release, "airline").execute(call)[0])[
        "membership"] == "gold"
    assert env.db_hash() != Tau2Environment(tau2_release, "airline").db_hash()


def test_unknown_domain(tau2_release):
    with pytest.raises(InputError, match=r"unknown τ² domain 'telecom' \(known: airline, retail\)"):
        Tau2Environment(tau2_release, "telecom")


def _replay(release, domain, tasks):
    errors, changed = [], 0
    for task in tasks:
        env = Tau2Environment(release, domain, task)
        initial = env.db_hash()
        wrote = False
        for action in task["evaluation_criteria"]["actions"]:
            content, error = env.execute(ToolCall(name=action["name"],
                                                  arguments=action["arguments"]))
            if error:
                errors.append((task["id"], action["name"], content))
            wrote |= not error and action["name"] in WRITE_TOOLS[domain]
        assert (env.db_hash() != initial) == wrote, task["id"]
        changed += wrote
    return errors, changed


def test_reference_actions_replay(tau2_release):
    errors, changed = _replay(tau2_release, "retail", tau2_release.tasks("retail")[:13])
    assert changed == 11
    assert errors == [
        ("2", "get_product_details", "Error: Product not found"),
        ("3", "get_product_details", "Error: Product not found"),
        ("4", "get_product_details", "Error: Product not found"),
        ("12", "return_delivered_order_items",
         "Error: Payment method should be the original payment method")]


@pytest.mark.slow
@pytest.mark.parametrize(("domain", "n_errors", "n_changed"),
                         [("airline", 0, 30), ("retail", 23, 103)])
def test_every_reference_action_replays(tau2_release, domain, n_errors, n_changed):
    """Every task's reference actions run without an exception; the ones that fail by design
    (retail: a product, user or order that does not exist, a refused payment) give τ²'s
    error; the database changes exactly when a write succeeded."""
    errors, changed = _replay(tau2_release, domain, tau2_release.tasks(domain))
    assert (len(errors), changed) == (n_errors, n_changed)


def _booking(release):
    """A task with a reference booking, and a call of it and a read of what it books."""
    task, action = next((t, a) for t in release.tasks("airline")
                        for a in t["evaluation_criteria"]["actions"]
                        if a["name"] == "book_reservation")
    return task, ToolCall(name="book_reservation", arguments=copy.deepcopy(action["arguments"])), \
        ToolCall(name="get_reservation_details", arguments={"reservation_id": "HATHAT"})


def test_a_write_leaks_into_no_other_environment(tau2_release):
    """Environments share one database until a write: the writer's booking is in its own
    database only, for environments built before and after it."""
    task, book, read = _booking(tau2_release)
    before, writer = (Tau2Environment(tau2_release, "airline", task) for _ in range(2))
    missing = ("Error: Reservation HATHAT not found", True)
    assert before.execute(read) == writer.execute(read) == missing
    assert not writer.execute(book)[1]
    assert not writer.execute(read)[1]
    after = Tau2Environment(tau2_release, "airline", task)
    assert before.execute(read) == after.execute(read) == missing
    assert before.tau2_environment.tools.db is not writer.tau2_environment.tools.db


def test_the_hash_after_a_write_is_the_written_databases(tau2_release):
    """The shared hash of an unwritten database is τ²'s hash of a fresh one; after a write,
    τ²'s hash of the environment's own database (never the shared one)."""
    task, book, _ = _booking(tau2_release)
    env = Tau2Environment(tau2_release, "airline", task)
    fresh = Tau2Environment(tau2_release, "airline", task).tau2_environment
    initial = env.db_hash()
    assert initial == fresh.get_db_hash()
    env.execute(book)
    assert env.db_hash() != initial == Tau2Environment(tau2_release, "airline", task).db_hash()
    fresh.get_response(tool_call_model(tau2_release, book))
    assert env.db_hash() == fresh.get_db_hash()


def test_a_failed_write_may_have_written(tau2_release):
    """τ²'s booking removes a certificate before it fails on the second use of it: the error
    flag says nothing of the database, so any write call gives the environment its own."""
    env = Tau2Environment(tau2_release, "airline")
    initial = env.db_hash()
    certificate = "certificate_4856383"  # mia_li_3668's, 100
    content, error = env.execute(ToolCall(name="book_reservation", arguments={
        "user_id": "mia_li_3668", "origin": "PHL", "destination": "LGA",
        "flight_type": "one_way", "cabin": "basic_economy",
        "flights": [{"flight_number": "HAT001", "date": "2024-05-16"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": certificate, "amount": 40},
                            {"payment_id": certificate, "amount": 47}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}))
    assert (content, error) == (f"Error: '{certificate}'", True)
    assert env.db_hash() != initial == Tau2Environment(tau2_release, "airline").db_hash()
    user = ToolCall(name="get_user_details", arguments={"user_id": "mia_li_3668"})
    assert certificate not in json.loads(env.execute(user)[0])["payment_methods"]
    assert certificate in json.loads(
        Tau2Environment(tau2_release, "airline").execute(user)[0])["payment_methods"]


def test_environments_share_by_initial_state(tau2_release):
    """The shared database is the initial state's: a task with one sees it, written or not,
    and no other environment does."""
    task = copy.deepcopy(tau2_release.tasks("airline")[0])
    task["initial_state"] = {"initialization_data": {"agent_data": {
        "users": {"mia_li_3668": {"membership": "silver"}}}}}
    user = ToolCall(name="get_user_details", arguments={"user_id": "mia_li_3668"})
    certificate = ToolCall(name="send_certificate",
                           arguments={"user_id": "mia_li_3668", "amount": 5})
    writer, reader = (Tau2Environment(tau2_release, "airline", task) for _ in range(2))
    plain = Tau2Environment(tau2_release, "airline", tau2_release.tasks("airline")[0])
    assert not writer.execute(certificate)[1]
    details = json.loads(writer.execute(user)[0])
    assert details["membership"] == "silver" and "certificate_3221322" in \
        details["payment_methods"]
    details = json.loads(reader.execute(user)[0])
    assert details["membership"] == "silver" and "certificate_3221322" not in \
        details["payment_methods"]
    assert json.loads(plain.execute(user)[0])["membership"] == "gold"
    assert len({writer.db_hash(), reader.db_hash(), plain.db_hash()}) == 3
    assert plain.db_hash() == Tau2Environment(tau2_release, "airline").db_hash()
