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
