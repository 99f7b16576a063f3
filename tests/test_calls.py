"""Call parsing: literals only, clear errors, nothing ever executed."""

from __future__ import annotations

import json

import pytest

from toolcalib.execute.calls import (
    CallParseError,
    param_order_from_docs,
    parse_calls,
    render_call,
)
from toolcalib.records import ToolCall

DOCS = [
    {"name": "sort", "parameters": {"properties": {"file_name": {}, "reverse": {}}}},
    {"name": "mean", "parameters": {"properties": {"numbers": {}}}},
]


def test_single_call_and_list():
    assert parse_calls("cd(folder='doc')") == [ToolCall(name="cd", arguments={"folder": "doc"})]
    calls = parse_calls(" [f(a=1), g(b='x', c=None)] \n")
    assert calls == [
        ToolCall(name="f", arguments={"a": 1}),
        ToolCall(name="g", arguments={"b": "x", "c": None}),
    ]
    assert parse_calls("[]") == []
    assert parse_calls("f(a=1), g(b='x', c=None)") == calls  # bare: BFCL adds the brackets
    assert parse_calls("f()") == [ToolCall(name="f")]


def test_literal_values_are_json_native():
    [call] = parse_calls(
        "f(a=-1, b=+2.5, c=(1, 'x'), d={'k': [True, False]}, e={3, 1, 3}, g=-0.0, h=1e3)"
    )
    assert call.arguments == {
        "a": -1,
        "b": 2.5,
        "c": [1, "x"],
        "d": {"k": [True, False]},
        "e": [3, 1],
        "g": -0.0,
        "h": 1000.0,
    }
    assert json.loads(json.dumps(call.arguments)) == call.arguments


def test_positional_arguments_follow_param_order():
    order = param_order_from_docs(DOCS)
    [call] = parse_calls("sort('final_report.pdf', reverse=True)", param_order=order)
    assert call.arguments == {"file_name": "final_report.pdf", "reverse": True}
    with pytest.raises(CallParseError, match="positional arguments need"):
        parse_calls("sort('a.pdf')")
    with pytest.raises(CallParseError, match="3 positional arguments, but it takes 2"):
        parse_calls("sort('a', True, 1)", param_order=order)
    with pytest.raises(CallParseError, match="'file_name' given more than once"):
        parse_calls("sort('a', file_name='b')", param_order=order)
    with pytest.raises(CallParseError, match="no parameter order known for function 'nope'"):
        parse_calls("nope(1)", param_order=order)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("f(a=1, a=2)", "'a' given more than once"),
        ("f(**{'a': 1})", r"\*\*-unpacking"),
        ("f(*[1])", r"\*-unpacking"),
        ("f(a={1: 'x'})", "dict keys must be strings"),
        ("f(a={**{}})", r"\*\*-unpacking"),
        ("f(a={[1]})", "a set cannot hold a list"),
        ("f(a=b'x')", "bytes literals are not allowed"),
        ("f(a=1j)", "complex literals are not allowed"),
        ("f(a=...)", "ellipsis literals are not allowed"),
        ("f(a=1e999)", "non-finite number"),
        ("f(a=-'x')", "a sign applies only to a number"),
        ("f(a=true)", "a name 'true' is not a literal"),
        ("f(a=1 + 2)", "an operator expression '1 \\+ 2' is not a literal"),
        ("f(a=x[0])", "a subscript"),
        ("f(a=[i for i in ()])", "a ListComp"),
        ("f(a=" + "[" * 70 + "]" * 70 + ")", "nested deeper than 64"),
        ("f(a=1", "not a Python expression"),
        ("'just text'", "expected a call or a list of calls, got a Constant"),
        ("[f(), 3]", "list item 1 is a Constant"),
        ("(f(), g())", "expected a call or a list of calls, got a Tuple"),
        ("f(a=1)\x00", "not a Python expression"),
    ],
)
def test_rejections_name_the_problem(source, message):
    with pytest.raises(CallParseError, match=message):
        parse_calls(source)


ATTACKS = [
    "__import__('os').system('touch X')",
    "[cd(folder='a'), __import__('os').system('touch X')]",
    "os.system('touch X')",
    "cd(folder=__import__('os').system('touch X'))",
    "cd(folder=open('X', 'w'))",
    "cd(folder=(lambda: __import__('os').system('touch X'))())",
    "(lambda: __import__('os').system('touch X'))()",
    "cd(folder=lambda: open('X', 'w'))",
    "cd(folder=f\"{__import__('os').system('touch X')}\")",
    "cd(folder=[open('X', 'w')])",
    "cd(folder={'k': open('X', 'w')})",
    "getattr(__builtins__, 'exec')('open(\"X\", \"w\")')",
]


@pytest.mark.parametrize("source", ATTACKS)
def test_code_is_rejected_and_nothing_runs(source, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CallParseError):
        parse_calls(source)
    assert not (tmp_path / "X").exists()


def test_rejection_messages_are_clear():
    with pytest.raises(CallParseError, match=r"must be a \(dotted\) name, got a call '__import__"):
        parse_calls("__import__('os')('touch X')")
    with pytest.raises(CallParseError, match="positional arguments need a known parameter order"):
        parse_calls("os.system('touch X')")
    with pytest.raises(CallParseError, match="no parameter order known for function 'os.system'"):
        parse_calls("os.system('touch X')", param_order=param_order_from_docs([]))


def test_dotted_tool_names_are_names_not_lookups():
    """BFCL tools such as `math.sum` are called by a dotted name: it stays a string."""
    assert parse_calls("[math.sum(numbers=[1, 2])]") == [
        ToolCall(name="math.sum", arguments={"numbers": [1, 2]})]
    with pytest.raises(CallParseError, match="argument 'folder': a call '__import__"):
        parse_calls("cd(folder=__import__('os').system('touch X'))")
    with pytest.raises(CallParseError, match="argument 'folder': a lambda"):
        parse_calls("cd(folder=lambda: 1)")
    with pytest.raises(CallParseError, match="argument 'folder': an f-string"):
        parse_calls("cd(folder=f'{x}')")


@pytest.mark.parametrize(
    "call",
    [
        ToolCall(name="f"),
        ToolCall(name="cp", arguments={"source": "a'b\"c", "destination": "dir\n"}),
        ToolCall(name="g", arguments={"x": [1, -2.5, None, True], "y": {"k": {"z": []}}}),
        ToolCall(name="h", arguments={"big": 10**30, "tiny": 1e-300, "u": "ü€"}),
    ],
)
def test_render_round_trips(call):
    text = render_call(call)
    assert parse_calls(text) == [call]
    assert parse_calls(f"[{text}, {text}]") == [call, call]


def test_render_form():
    call = ToolCall(name="mv", arguments={"source": "a.txt", "destination": "b"})
    assert render_call(call) == "mv(source='a.txt', destination='b')"
