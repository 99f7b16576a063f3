"""The executor on real BFCL classes: BFCL's result strings, refusals, canonical state."""

from __future__ import annotations

import importlib
import json
import sys
from itertools import pairwise

import pytest

from toolcalib.benchmarks.bfcl.executor import ERROR_PREFIX, Environment, snapshot
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.execute.calls import parse_calls
from toolcalib.records import ToolCall

MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_long_context",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
)
FS_CONFIG = {
    "GorillaFileSystem": {
        "root": {
            "alex": {
                "type": "directory",
                "contents": {"notes.txt": {"type": "file", "content": "a\nb\n"}},
            }
        }
    }
}


@pytest.fixture(scope="module")
def cases(bfcl_release):
    return [case for category in MULTI_TURN for case in load_cases(bfcl_release, category)]


@pytest.fixture
def fs_env(bfcl_release):
    return Environment(bfcl_release, ["GorillaFileSystem", "MathAPI"], FS_CONFIG, False)


def env_for(release, case):
    env = case.environment
    return Environment(release, env["involved_classes"], env["initial_config"], env["long_context"])


def test_results_are_bfcl_strings(fs_env):
    assert fs_env.execute(ToolCall(name="ls")) == '{"current_directory_content": ["notes.txt"]}'
    assert fs_env.execute(ToolCall(name="cat", arguments={"file_name": "notes.txt"})) == (
        '{"file_content": "a\\nb\\n"}'
    )
    assert fs_env.execute_all(
        [ToolCall(name="mean", arguments={"numbers": [1, 2]}), ToolCall(name="pwd")]
    ) == ['{"result": 1.5}', '{"current_working_directory": "/alex"}']


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (ToolCall(name="foo", arguments={"a": 1}), "name 'foo' is not defined"),
        (ToolCall(name="_load_scenario", arguments={"scenario": {}}), "name '_load_scenario'"),
        (ToolCall(name="__init__"), "name '__init__' is not defined"),
        (ToolCall(name="root"), "name 'root' is not defined"),
        (ToolCall(name="long_context"), "name 'long_context' is not defined"),
        (ToolCall(name="kill"), "Function call kill is not allowed."),
        (ToolCall(name="remove", arguments={"x": 1}), "Function call remove is not allowed."),
        (ToolCall(name="run"), "Function call run is not allowed."),
        (ToolCall(name="ls", arguments={"bogus": 1}), "unexpected keyword argument 'bogus'"),
        (ToolCall(name="cd"), "missing 1 required positional argument: 'folder'"),
        (ToolCall(name="mean", arguments={"numbers": []}), '{"error": '),
        (ToolCall(name="mkdir", arguments={"dir_name": ["a"]}), "unhashable type: 'list'"),
    ],
)
def test_failures_become_error_strings(fs_env, call, message):
    result = fs_env.execute(call)
    assert message in result
    assert result.startswith(ERROR_PREFIX) == (not message.startswith("{"))


@pytest.mark.parametrize(
    "source",
    [
        'exec(source=\'open("X", "w")\')',
        'eval(source=\'open("X", "w")\')',
        "system(command='touch X')",
        "__import__(name='os')",
        "open(file='X', mode='w')",
        "[touch(file_name='ok'), popen(cmd='touch X')]",
    ],
)
def test_parsed_builtins_do_not_run(fs_env, source, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = fs_env.execute_all(parse_calls(source))
    assert results[-1].startswith(ERROR_PREFIX)
    assert not (tmp_path / "X").exists()


def test_environments_are_fresh_and_config_untouched(bfcl_release, fs_env):
    before = json.dumps(FS_CONFIG, sort_keys=True)
    fs_env.execute(ToolCall(name="touch", arguments={"file_name": "new.txt"}))
    other = Environment(bfcl_release, ["GorillaFileSystem"], FS_CONFIG, False)
    assert other.execute(ToolCall(name="ls")) == '{"current_directory_content": ["notes.txt"]}'
    assert json.dumps(FS_CONFIG, sort_keys=True) == before


def test_arguments_are_not_aliased_into_state(bfcl_release):
    env = Environment(bfcl_release, ["TwitterAPI"], {"TwitterAPI": {"authenticated": True}}, False)
    call = ToolCall(name="post_tweet", arguments={"content": "hi", "tags": ["#a"]})
    env.execute(call)
    for tweet in env.instances["TwitterAPI"].tweets.values():
        tweet["tags"].append("#changed")
    assert call.arguments["tags"] == ["#a"]


def test_snapshot_follows_python_equality():
    equal = [(1, 1.0), (True, 1), (0, -0.0), ({1: "a"}, {1.0: "a"}), ({2, 1}, {1, 2})]
    unequal = [
        ([1], (1,)),
        ({"1": "a"}, {1: "a"}),
        ({"<set>": [1]}, {1}),
        (1.5, 1),
        ("1", 1),
        ([1, 2], [2, 1]),
        (None, 0),
        ({"a": 1}, {"a": 1, "b": None}),
    ]
    for left, right in equal:
        assert left == right and snapshot(left) == snapshot(right)
    for left, right in unequal:
        assert left != right and snapshot(left) != snapshot(right)
    with pytest.raises(TypeError, match="no canonical snapshot"):
        snapshot(object())


def test_snapshot_respects_file_system_eq(bfcl_release):
    module = sys.modules[bfcl_release.api_class("GorillaFileSystem").__module__]
    left, right = module.Directory("d"), module.Directory("d", parent=module.Directory("p"))
    left._add_file("f", "x")
    right._add_file("f", "x")
    right.contents["f"]._last_modified = None
    assert left == right and snapshot(left) == snapshot(right)
    right.contents["f"].content = "y"
    assert left != right and snapshot(left) != snapshot(right)
    assert module.File("d") != module.Directory("d")
    assert snapshot(module.File("d")) != snapshot(module.Directory("d"))


def _variants(case):
    """Executions of a case's ground truth and of small changes to it."""
    turns = [list(turn.gold_calls) for turn in case.turns]
    calls = [call for turn in turns for call in turn]
    yield turns
    yield turns[:-1]
    if calls:
        yield [turn[:-1] for turn in turns]
        yield [turn[1:] + turn[:1] for turn in turns]
        first = calls[0]
        if first.arguments:
            key = next(iter(first.arguments))
            changed = first.replace(**{"arguments": {**first.arguments, key: "zz"}})
            yield [[changed if call is first else call for call in turn] for turn in turns]


def _run(release, case, turns):
    env = env_for(release, case)
    for calls in turns:
        env.execute_all(calls)
    return env


def test_state_equal_iff_bfcl_compare_instances(bfcl_release, bfcl_wheel, cases):
    """On real states: snapshots equal exactly when BFCL's checker finds no differing attribute."""
    if str(bfcl_wheel) not in sys.path:
        sys.path.append(str(bfcl_wheel))
    checker = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    outcomes = {True: 0, False: 0}
    for index, case in enumerate(cases):
        gold = _run(bfcl_release, case, [turn.gold_calls for turn in case.turns])
        gold_state = gold.state()
        assert json.loads(json.dumps(gold_state)) == gold_state
        others = [_run(bfcl_release, case, turns) for turns in _variants(case)]
        if index % 4 == 0:  # also states of neighbouring cases (same class mix or not)
            neighbour = cases[(index + 1) % len(cases)]
            if neighbour.environment["involved_classes"] == case.environment["involved_classes"]:
                others.append(_run(bfcl_release, neighbour, []))
        for other in others:
            other_state = other.state()
            for name, instance in gold.instances.items():
                equal, differences = checker._compare_instances(other.instances[name], instance)
                differing = {a for a, v in gold_state[name].items() if other_state[name][a] != v}
                assert differing == set(differences), (case.id, name)
                assert (other_state[name] == gold_state[name]) == equal, (case.id, name)
                outcomes[equal] += 1
    assert min(outcomes.values()) > 500, outcomes


def test_same_calls_same_state_and_results(bfcl_release, cases):
    """Replays are deterministic (seeded simulators, pinned time zone)."""
    for first, second in pairwise(cases[::40]):
        for case in (first, second):
            calls = [call for turn in case.turns for call in turn.gold_calls]
            one, two = env_for(bfcl_release, case), env_for(bfcl_release, case)
            assert one.execute_all(calls) == two.execute_all(calls)
            assert one.state() == two.state()
