"""Text call decoding: every format small models emit, precise malformed vs none, never code."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from toolcalib.classify.base import NO_CONTEXT
from toolcalib.classify.validation import load_corpus
from toolcalib.execute.calls import param_order_from_docs, render_call
from toolcalib.execute.textcalls import TextParse, decode_emission, parse_text_calls
from toolcalib.jsonio import dumps, parse_line
from toolcalib.records import Emission, ToolCall

WEATHER = ToolCall(name="get_weather", arguments={"city": "Paris"})
LS = ToolCall(name="ls", arguments={"a": True})
CALL_JSON = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
LS_JSON = '{"name": "ls", "arguments": {"a": true}}'
FENCE = "```"


def ok(text: str) -> tuple[list[ToolCall], str]:
    result = parse_text_calls(text)
    assert result.status == "ok", result
    assert result.error is None
    return result.calls, result.format


def malformed(text: str) -> TextParse:
    result = parse_text_calls(text)
    assert result.status == "malformed", result
    assert result.calls == [] and result.error
    return result


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (f"<tool_call>\n{CALL_JSON}\n</tool_call>", [WEATHER]),
        (f"Sure.\n<tool_call>{CALL_JSON}</tool_call>\n<TOOL_CALL>{LS_JSON}</TOOL_CALL>",
         [WEATHER, LS]),
        (f"<tool_call>\n{CALL_JSON}", [WEATHER]),  # closing tag cut off at the end
        (f"<tool_call>{CALL_JSON}\n<tool_call>{LS_JSON}</tool_call>", [WEATHER, LS]),
        (f"<tool_call>[{CALL_JSON}, {LS_JSON}]</tool_call>", [WEATHER, LS]),
        (f"<tool_call>{CALL_JSON} {LS_JSON}</tool_call>", [WEATHER, LS]),
        (f"<tool_call>\n{FENCE}json\n{CALL_JSON}\n{FENCE}\n</tool_call>", [WEATHER]),
        ('<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}</tool_call>',
         [WEATHER]),
        ('<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}'
         "</tool_call>", [WEATHER]),
        ("<tool_call>{'name': 'ls', 'arguments': {'a': True}}</tool_call>", [LS]),
    ],
)
def test_tool_call_tags(text: str, calls: list[ToolCall]) -> None:
    assert ok(text) == (calls, "tag")


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (CALL_JSON, [WEATHER]),
        (f"  \n{CALL_JSON}\n", [WEATHER]),
        (f"[{CALL_JSON}, {LS_JSON}]", [WEATHER, LS]),
        (f"{CALL_JSON}\n{CALL_JSON}\n{LS_JSON}", [WEATHER, WEATHER, LS]),  # a looping model
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}', [WEATHER]),
        ('{"name": "ls"}', [ToolCall(name="ls")]),
        ('{"name": "ls", "id": "c1", "type": "function"}', [ToolCall(name="ls")]),
        ("{'name': 'ls', 'arguments': {'a': True}}", [LS]),
        ('{"type": "function", "function": {"name": "get_weather",'
         ' "arguments": "{\\"city\\": \\"Paris\\"}"}}', [WEATHER]),
        (f'{{"tool_calls": [{CALL_JSON}, {{"function": {LS_JSON}}}]}}', [WEATHER, LS]),
        ('{"name": "f", "arguments": {"x": [1, 2.5, null, {"y": "z"}]}}',
         [ToolCall(name="f", arguments={"x": [1, 2.5, None, {"y": "z"}]})]),
        ("{'name': 'f', 'arguments': {'t': (1, 'a'), 'n': None}}",
         [ToolCall(name="f", arguments={"t": [1, "a"], "n": None})]),
    ],
)
def test_bare_json(text: str, calls: list[ToolCall]) -> None:
    assert ok(text) == (calls, "json")


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (f"{FENCE}json\n{CALL_JSON}\n{FENCE}", [WEATHER]),
        (f"{FENCE}\n[{CALL_JSON}, {LS_JSON}]\n{FENCE}", [WEATHER, LS]),
        (f"I will check the weather.\n{FENCE}json\n{CALL_JSON}\n{FENCE}\nThen list files.",
         [WEATHER]),
        (f"First:\n{FENCE}json\n{CALL_JSON}\n{FENCE}\nthen\n{FENCE}JSON\n{LS_JSON}\n{FENCE}\n",
         [WEATHER, LS]),
        (f"Code:\n{FENCE}python\nprint('hi')\n{FENCE}\nCall:\n{FENCE}json\n{CALL_JSON}\n{FENCE}",
         [WEATHER]),
        (f"{FENCE}json\n{CALL_JSON}\n{FENCE}\n{FENCE}json\n{LS_JSON}\n{FENCE}", [WEATHER, LS]),
        (f"Here:\n{FENCE}json\n{CALL_JSON}", [WEATHER]),  # closing fence cut off
    ],
)
def test_fenced_json(text: str, calls: list[ToolCall]) -> None:
    assert ok(text) == (calls, "fenced_json")


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("[get_weather(city='Paris'), ls(a=True)]", [WEATHER, LS]),
        ("get_weather(city='Paris')", [WEATHER]),
        ("  [ls(a=True)]\n", [LS]),
        (f"{FENCE}python\n[get_weather(city='Paris')]\n{FENCE}", [WEATHER]),
        (f"{FENCE}\nls(a=True)\n{FENCE}", [LS]),
        # BFCL's prompt decoder brackets a text that lacks them: a bare sequence is a list
        ("get_weather(city='Paris'), ls(a=True)", [WEATHER, LS]),
        (f"{FENCE}\nget_weather(city='Paris'),\nls(a=True)\n{FENCE}", [WEATHER, LS]),
        ("f(x={'k': (1, 2)}, y=-3)", [ToolCall(name="f", arguments={"x": {"k": [1, 2]}, "y": -3})]),
    ],
)
def test_python_calls(text: str, calls: list[ToolCall]) -> None:
    assert ok(text) == (calls, "python")


def test_python_positional_arguments_need_a_parameter_order() -> None:
    result = malformed("[get_weather('Paris')]")
    assert result.format == "python"
    assert "positional arguments need a known parameter order" in result.error
    order = param_order_from_docs([{"name": "get_weather",
                                    "parameters": {"properties": {"city": {}}}}])
    assert parse_text_calls("[get_weather('Paris')]", order).calls == [WEATHER]


@pytest.mark.parametrize(
    ("text", "fmt", "error"),
    [
        ("<tool_call>get_weather(city='Paris')</tool_call>", "tag", "invalid JSON"),
        ('<tool_call>{"name": "f", "arguments": {"a": 1</tool_call>', "tag", "invalid JSON"),
        ('<tool_call>{"arguments": {"a": 1}}</tool_call>', "tag", "not a call object"),
        ("<tool_call></tool_call>", "tag", "empty"),
        ("I'll call it now <tool_call", "tag", "unterminated opening tag"),
        (f"<tool_call>{CALL_JSON}</tool_call><tool_call>{{\"name\": \"ls\"", "tag",
         "<tool_call> 2: invalid JSON"),
        ('{"name": "get_weather", "arguments": {"city": "Par', "json", "invalid JSON"),
        (f"[{CALL_JSON}, {{\"name\": \"ls\", \"argu", "json", "invalid JSON"),
        (f"{CALL_JSON}\n{CALL_JSON}\n{{\"name\": \"get_wea", "json", "after 2 JSON value(s)"),
        (f"{CALL_JSON}\nThat gets the weather.", "json", "after 1 JSON value(s)"),
        ('{"name": 5, "arguments": {}}', "json", "name must be a non-empty string, got 5"),
        ('{"name": "", "arguments": {}}', "json", "name must be a non-empty string"),
        ('{"name": "f", "arguments": [1, 2]}', "json", "arguments must be an object"),
        ('{"name": "f", "arguments": null}', "json", "arguments must be an object"),
        ('{"name": "f", "arguments": "city=Paris"}', "json", "arguments string is not JSON"),
        ('{"name": "f", "arguments": "[1]"}', "json", "arguments must be an object"),
        ('{"name": "f", "arguments": {"x": NaN}}', "json", "non-finite"),
        ('{"name": "f", "arguments": {"x": 1e999}}', "json", "non-finite"),
        ("{'name': 'f', 'arguments': {'x': {1, 2}}}", "json", "set values are not JSON"),
        ("{'name': 'f', 'arguments': {1: 'x'}}", "json", "keys must be strings"),
        (f"[{CALL_JSON}, 3]", "json", "is not an object"),
        ('{"tool_calls": [{"arguments": {}}]}', "json", "name must be"),
        ('{"name": "f", "arguments": ' + "[" * 100 + "]" * 100 + "}", "json", "nested deeper"),
        (f"Calling:\n{FENCE}json\n{{\"name\": \"f\", \"arguments\": {{\n{FENCE}", "fenced_json",
         "invalid JSON"),
        (f"{FENCE}json\n{CALL_JSON}\n{FENCE}\n{FENCE}json\n{{\"name\": 1}}\n{FENCE}",
         "fenced_json", "name must be"),
        ("[os.system('rm -rf /')]", "python", "attribute chain 'os.system'"),
        ("[f(a=g(1))]", "python", "is not a literal"),
        ("[f(a=1), g(b=", "python", "not a Python expression"),
        ("[f(a=1), 3]", "python", "not a call"),
        ("__import__('os').system('touch pwned')", "python", "(dotted) name"),
        (f"{FENCE}python\nf(a=x)\n{FENCE}", "python", "is not a literal"),
    ],
)
def test_malformed(text: str, fmt: str, error: str) -> None:
    result = malformed(text)
    assert result.format == fmt
    assert error in result.error


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "The weather in Paris is sunny.",
        "I cannot do that. Which file do you mean?",
        "You could call get_weather(city='Paris') to find out.",  # mid-prose: not a call
        f"I would send {CALL_JSON} to the API.",  # mid-prose JSON without fences: not a call
        '{"answer": 3}',
        '{"name": "Alice", "age": 30}',  # data with a name, not a call
        "[1, 2, 3]",
        "[]",
        '{"tool_calls": []}',
        '{"answer": ',  # truncated JSON that is not a call
        f"Example:\n{FENCE}json\n{{\"answer\": 3}}\n{FENCE}",
        f"{FENCE}bash\nls -la\n{FENCE}",
        f"{FENCE}python\nprint(x)\nprint(y)\n{FENCE} as shown",
        "Sure (happy to help)",
        "Note: see [the docs](http://x) for details",
        "</tool_call>",
        "<tool_calls> is the tag name",
        "<tool_call>[]",  # an empty call list in a tag: no call, no attempt
        "ASSISTANT: <tool_call>[ ]</tool_call>",
    ],
)
def test_plain_text_is_none(text: str) -> None:
    assert parse_text_calls(text) == TextParse()


NOT_A_TOOL_NAME = [
    # attribute chains that are no visible tool's name
    ('os.system("ls")', "attribute chain 'os.system'"),
    ('api.cd(folder="x")', "attribute chain 'api.cd'"),
    ("GorillaFileSystem.cd(folder='document')", "attribute chain 'GorillaFileSystem.cd'"),
    ("self.ls(a=True)", "attribute chain 'self.ls'"),
    (f"{FENCE}python\napi.cd(folder='x')\n{FENCE}", "attribute chain 'api.cd'"),
    # subscripts
    ('tools["cd"](folder="x")', "got a subscript 'tools['cd']'"),
    ("functions[0](folder='x')", "got a subscript 'functions[0]'"),
    ('[tools["cd"](folder="x")]', "got a subscript"),
    (f"{FENCE}\ntools['ls'](a=True)\n{FENCE}", "got a subscript"),
    # calls on call results
    ("f(x)(y)", "got a call 'f(x)'"),
    ("get_tool(name='cd')(folder='x')", "got a call 'get_tool(name='cd')'"),
    ("cd(folder='x').ls(a=True)", "got an attribute access"),
    # bracketed lists and tuples of such expressions
    ("[a.b(c=1), d()]", "attribute chain 'a.b'"),
    ("[ls(a=True), api.cd(folder='x')]", "attribute chain 'api.cd'"),
    ("[3, ls(a=True)]", "list item 0 is a Constant"),
    ("(cd(folder='x'), ls(a=True))", "got a Tuple"),
]


@pytest.mark.parametrize(("text", "error"), NOT_A_TOOL_NAME)
def test_calls_of_what_is_not_a_tool_name_are_malformed(text: str, error: str) -> None:
    """Issue 14 item 4: an attempt to call something that is not a plain tool name is
    malformed (never `none`, hence never `other`) and yields no call to execute."""
    result = malformed(text)
    assert result.format == "python"
    assert error in result.error
    decoded = decode_emission(Emission(text=text), param_order_from_docs([]), ["ls", "cd"])
    assert decoded.parse == "malformed" and decoded.tool_calls == []


class NeverAsked:
    """A judge backend that must not be asked: the rules decide call attempts."""

    name = "never-asked"
    cacheable = True

    def identity(self) -> dict[str, str]:
        return {"backend": "test"}

    def generate_batch(self, requests: list[object]) -> list[Emission]:
        raise AssertionError(f"the judge was asked {len(requests)} question(s)")


def test_every_profile_classes_them_malformed() -> None:
    from toolcalib.classify.judge import JudgeProfile
    from toolcalib.classify.profiles import get_profile

    profiles = [get_profile("paper"), get_profile("default"),
                JudgeProfile(NeverAsked(), get_profile("default"))]
    emissions = [decode_emission(Emission(text=text), None, ["ls", "cd"])
                 for text, _ in NOT_A_TOOL_NAME]
    for profile in profiles:
        profile.prepare(emissions)
        for emission in emissions:
            action = profile.classify(emission, NO_CONTEXT)
            assert action.action == "malformed", (profile.name, emission.text, action)
            assert action.rule.startswith("malformed:")


def test_a_dotted_name_is_a_tool_name_only_when_a_visible_tool_has_it() -> None:
    total = ToolCall(name="math.sum", arguments={"numbers": [1, 2]})
    text = "[math.sum(numbers=[1, 2])]"
    assert parse_text_calls(text, tool_names=["math.sum"]) == TextParse([total], "ok", None,
                                                                         "python")
    assert "attribute chain 'math.sum'" in malformed(text).error  # no visible tools named
    assert parse_text_calls(text, tool_names=["math.add"]).status == "malformed"
    mixed = parse_text_calls("[math.sum(numbers=[1]), os.system(cmd='ls')]",
                             tool_names=["math.sum"])
    assert mixed.status == "malformed" and "'os.system'" in mixed.error
    plain = parse_text_calls("made_up_tool(x=1)", tool_names=["math.sum"])
    assert plain.calls == [ToolCall(name="made_up_tool", arguments={"x": 1})]  # a plain name
    order = param_order_from_docs([{"name": "math.sum",
                                    "parameters": {"properties": {"numbers": {}}}}])
    decoded = decode_emission(Emission(text="math.sum([1, 2])"), order, ["math.sum"])
    assert decoded.parse == "ok" and decoded.tool_calls == [total]


def test_the_corpus_parse_is_what_the_harness_makes_of_each_text() -> None:
    """Every hand and model row's `parse` is what the harness makes of its text (no tool
    docs), so a parser change that would change one shows here, not only in the validation
    figures; a published run's agent message went through no text parser (its calls came
    structured), so its `parse` is `ok` with structured calls and `none` without (as
    `benchmarks.tau2.published` imports it); a BFCL panel row's (`bfcl-*`) parse is the
    importer's, with its case's tool docs (`tests/test_bfcl_heldout.py` rebuilds them); the rows
    written for issue 14 are there and say so."""
    rows = load_corpus(Path(__file__).parent / "data" / "classifier_corpus.jsonl")
    published = [r for r in rows if r.source.startswith("published")]
    assert published and all(r.parse == ("ok" if r.structured_calls else "none")
                             for r in published)
    stale = [(r.id, r.parse, status) for r in rows if not r.structured_calls
             and not r.source.startswith(("published", "bfcl-"))
             and (status := parse_text_calls(r.text).status) != r.parse]
    assert stale == []
    issue = [r for r in rows if r.id.startswith("hand-issue14-")]
    assert all(r.source == "hand" and "written for issue 14" in r.reason for r in issue)
    assert Counter((r.label, r.parse) for r in issue) == {("malformed", "malformed"): 12,
                                                         ("other", "none"): 3}


@pytest.mark.parametrize(
    "text",
    [
        "use `os.path.join`",
        "Use `os.path.join('a', 'b')` to build the path.",
        "You could run `api.cd(folder='x')` first.",
        "`tools['cd'](folder='x')`",
        "Try os.system('ls') in a shell.",
        "Paris (France)",
        "Yes (confirmed)",
        "[the docs](README)",
        "[1, 2, 3]",
        "(see f(x))",
        f"{FENCE}python\nimport os\nos.system('ls')\n{FENCE}",
        f"To list files:\n{FENCE}python\nos.listdir('.')\n{FENCE}",
    ],
)
def test_code_mentioned_in_prose_is_no_call_attempt(text: str) -> None:
    assert parse_text_calls(text) == TextParse()


def test_decode_emission_sets_calls_and_status() -> None:
    decoded = decode_emission(Emission(text=f"<tool_call>{CALL_JSON}</tool_call>",
                                       finish_reason="stop"))
    assert decoded.tool_calls == [WEATHER] and decoded.parse == "ok"
    assert decoded.parse_error is None and not decoded.structured
    assert decoded.text.startswith("<tool_call>") and decoded.finish_reason == "stop"
    bad = decode_emission(Emission(text='{"name": "f", "arguments": {'))
    assert bad.parse == "malformed" and bad.tool_calls == [] and "invalid JSON" in bad.parse_error
    plain = decode_emission(Emission(text="Which folder?", structured=True))
    assert plain == Emission(text="Which folder?", structured=True)


def test_calls_from_text_are_not_structured() -> None:
    decoded = decode_emission(Emission(text=CALL_JSON, structured=True))
    assert decoded.tool_calls == [WEATHER] and not decoded.structured


def test_structured_calls_pass_through() -> None:
    raw = Emission(text="[rm(file='x')]", tool_calls=[LS], structured=True,
                   parse="malformed", parse_error="stale")
    decoded = decode_emission(raw)
    assert decoded.tool_calls == [LS] and decoded.structured
    assert decoded.parse == "ok" and decoded.parse_error is None


def test_decoded_arguments_survive_a_json_round_trip() -> None:
    text = "{'name': 'f', 'arguments': {'a': (1, 2), 'b': {'c': None, 'd': -1.5}, 'e': 'x'}}"
    decoded = decode_emission(Emission(text=text))
    assert parse_line(dumps(decoded), Emission, "x", 1) == decoded


HOSTILE = [
    "__import__('os').system('touch pwned')",
    "[__import__('os').system('touch pwned')]",
    "[f(a=__import__('os').system('touch pwned'))]",
    "[f(a=open('pwned', 'w'))]",
    "exec(\"open('pwned', 'w')\")",
    "eval(\"open('pwned', 'w')\")",
    "{'name': 'f', 'arguments': {'a': __import__('os').system('touch pwned')}}",
    "{'name': 'f', 'arguments': {'a': open('pwned', 'w')}}",
    "<tool_call>{'name': 'f', 'arguments': {'a': open('pwned', 'w')}}</tool_call>",
    f"{FENCE}python\n__import__('os').system('touch pwned')\n{FENCE}",
    f"{FENCE}json\n{{'name': 'f', 'arguments': __import__('os').system('touch pwned')}}\n{FENCE}",
    "[(lambda: open('pwned', 'w'))()]",
    "[f(a=[x for x in open('pwned', 'w')])]",
    "__builtins__['open']('pwned', 'w')",
    "[__builtins__['exec'](code=\"open('pwned', 'w')\")]",
    "os.system(command='touch pwned')",
    "(open(file='pwned', mode='w'), g())",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_code_is_never_executed(text: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    decoded = decode_emission(Emission(text=text))
    assert decoded.tool_calls == []
    assert decoded.parse == ("none" if text.startswith("[(") else "malformed")
    assert list(tmp_path.iterdir()) == []


FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<tool_call", "```", "```json\n", "\n", " ", "{", "}", "[",
    "]", "(", ")", ",", ":", '"name"', "'name'", '"arguments"', '"parameters"', '"function"',
    '"tool_calls"', '"get_weather"', '"city"', '"Paris"', "'x'", "1", "-2.5", "1e999", "NaN",
    "true", "None", "True", "null", "ls", "f(", "a=", "os.system", "__import__('os')", "\\",
    '"', "'", "Sure, ", "I cannot ", "?", "é", "\u201c", CALL_JSON, LS_JSON, "[ls(a=True)]",
    "{1, 2}", "(1, 2)", "lambda: 0", "[" * 80, "]" * 80, "{" * 300,
]
CHARS = "ab Z'\"\\\n{}[]():,é中"


def garbled(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 14)))


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 3 else 6)
    if kind < 2:
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 8)))
    simple = [rng.randint(-10**6, 10**6), rng.uniform(-1e3, 1e3), rng.random() < 0.5, None]
    if kind < 6:
        return simple[kind - 2]
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}{rng.choice(CHARS)}": random_value(rng, depth + 1) for i in range(3)}


def random_calls(rng: random.Random) -> list[ToolCall]:
    return [
        ToolCall(name=rng.choice(["ls", "get_weather", "f_2"]),
                 arguments={f"p{i}": random_value(rng) for i in range(rng.randint(0, 3))})
        for _ in range(rng.randint(1, 3))
    ]


def render(calls: list[ToolCall], fmt: str, rng: random.Random) -> str:
    objects = [{"name": call.name, "arguments": call.arguments} for call in calls]
    if fmt == "tag":
        return "Sure.\n" + "\n".join(f"<tool_call>\n{json.dumps(o)}\n</tool_call>" for o in objects)
    if fmt == "json":
        return json.dumps(objects if len(objects) > 1 or rng.random() < 0.5 else objects[0])
    if fmt == "fenced_json":
        return f"Calling now:\n```json\n{json.dumps(objects, indent=2)}\n```\nDone."
    return "[" + ", ".join(render_call(call) for call in calls) + "]"


def decoded_checked(text: str) -> Emission:
    """Decode once and check the invariants every decoding keeps."""
    once = decode_emission(Emission(text=text))
    assert decode_emission(once) == once
    assert (once.parse == "ok") == bool(once.tool_calls)
    assert (once.parse == "malformed") == (once.parse_error is not None)
    for call in once.tool_calls:
        assert json.loads(json.dumps(call.arguments, allow_nan=False)) == call.arguments
    return once


def test_decode_never_raises_and_is_idempotent(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rng = random.Random(0)
    texts = [garbled(rng) for _ in range(600)]
    texts += ["".join(rng.sample(text, len(text))) for text in texts[:100]]
    statuses = {decoded_checked(text).parse for text in texts}
    assert statuses == {"none", "ok", "malformed"}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["tag", "json", "fenced_json", "python"])
def test_rendered_calls_round_trip_and_truncations_never_raise(fmt: str) -> None:
    rng = random.Random(fmt)
    for _ in range(100):
        calls = random_calls(rng)
        text = render(calls, fmt, rng)
        assert parse_text_calls(text) == TextParse(calls, "ok", None, fmt)
        decoded_checked(text[: rng.randrange(len(text))])


@pytest.mark.parametrize(
    "text",
    ["```" * 10**5, "```\n" * 10**5, "```json\n{" * 10**4, "<tool_call>{" * 10**4,
     "{" * 10**5, "[" * 10**5, "f(" * 10**4, '"name" ' * 10**5, "```json\n" + "a" * 10**5],
    ids=["backticks", "fences", "open_blocks", "open_tags", "braces", "brackets", "calls",
         "name_keys", "long_block"],
)
def test_pathological_inputs_stay_fast(text: str) -> None:
    started = time.perf_counter()
    decoded_checked(text)
    assert time.perf_counter() - started < 5
