"""The multi-turn loop with the reference policies on real BFCL cases."""

from __future__ import annotations

import pytest

from toolcalib.backends import make_backend
from toolcalib.backends.base import ContextOverflow, InfrastructureError, Request
from toolcalib.benchmarks.bfcl.executor import ERROR_PREFIX
from toolcalib.benchmarks.bfcl.gold import case_environment
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.config import ModelSpec
from toolcalib.generate import run_case
from toolcalib.jsonio import InputError
from toolcalib.records import Emission, ToolCall
from toolcalib.variants import get_variant

BASELINE = get_variant("baseline")


@pytest.fixture(scope="module")
def cases(bfcl_release):
    return {c: load_cases(bfcl_release, c)[:3] for c in
            ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "irrelevance")}


def policy(name):
    return make_backend(ModelSpec(name=f"policy-{name}", backend="policy",
                                  options={"policy": name}))


def run(bfcl_release, case, backend):
    return run_case(case, backend, BASELINE, lambda c: case_environment(c, bfcl_release))


def test_oracle_replays_ground_truth_and_abstains_at_gold_turns(bfcl_release, cases):
    for category in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param"):
        for case in cases[category]:
            trajectory = run(bfcl_release, case, policy("oracle"))
            assert trajectory.outcome == "completed"
            assert len(trajectory.turns) == len(case.turns)
            for turn, trace in zip(case.turns, trajectory.turns, strict=True):
                calls = [c for s in trace.steps for c in s.emission.tool_calls]
                assert calls == turn.gold_calls
                assert trace.ended == "no_call"
                assert not any(r.startswith(ERROR_PREFIX) for s in trace.steps for r in s.results)
            gold = trajectory.turns[case.gold_turn].steps[0].emission
            if case.gold_action != "tool_call":
                assert gold.text and not gold.tool_calls


def test_messages_hold_the_whole_conversation(bfcl_release, cases):
    case = cases["multi_turn_miss_func"][0]
    trajectory = run(bfcl_release, case, policy("oracle"))
    roles = [m.role for m in trajectory.messages]
    assert roles.count("user") == len(case.turns)
    n_calls = sum(len(t.gold_calls) for t in case.turns)
    assert roles.count("tool") == n_calls
    tool_names = [m.name for m in trajectory.messages if m.role == "tool"]
    assert tool_names == [c.name for t in case.turns for c in t.gold_calls]


def test_always_call_calls_a_visible_tool_every_turn(bfcl_release, cases):
    case = cases["multi_turn_base"][0]
    trajectory = run(bfcl_release, case, policy("always_call"))
    visible = {doc["name"] for doc in case.tools}
    for trace in trajectory.turns:
        first = trace.steps[0].emission
        assert first.structured and first.tool_calls[0].name in visible
        assert len(trace.steps) == 2 and not trace.steps[1].emission.tool_calls


def test_single_turn_cases_get_one_emission_and_no_execution(bfcl_release, cases):
    case = cases["irrelevance"][0]
    trajectory = run(bfcl_release, case, policy("always_call"))
    [trace] = trajectory.turns
    assert trace.ended == "single_step" and len(trace.steps) == 1
    assert trace.steps[0].emission.tool_calls and trace.steps[0].results == []


def test_never_call_emits_text_only(bfcl_release, cases):
    trajectory = run(bfcl_release, cases["multi_turn_base"][1], policy("never_call"))
    assert all(not s.emission.tool_calls for t in trajectory.turns for s in t.steps)
    assert len(trajectory.turns) == len(cases["multi_turn_base"][1].turns)


class Looping:
    """Calls forever: exercises BFCL's per-turn step cap."""

    name = "looping"

    def identity(self):
        return {"backend": "test"}

    cacheable = False

    def generate_batch(self, requests: list[Request]) -> list[Emission]:
        return [Emission(tool_calls=[ToolCall(name="pwd")], structured=True) for _ in requests]


class Failing:
    name = "failing"

    def __init__(self, exc):
        self.exc = exc

    def identity(self):
        return {"backend": "test"}

    cacheable = False

    def generate_batch(self, requests: list[Request]) -> list[Emission | Exception]:
        return [self.exc if r.turn == 1 else Emission(text="ok") for r in requests]


class Texts:
    """Answers each request with the text of its (turn, step) in `script`, else "Done."."""

    name = "texts"
    cacheable = False

    def __init__(self, script):
        self.script = script

    def identity(self):
        return {"backend": "test"}

    def generate_batch(self, requests: list[Request]) -> list[Emission]:
        return [Emission(text=self.script.get((r.turn, r.step), "Done.")) for r in requests]


def test_a_call_of_what_is_not_a_tool_name_executes_nothing(bfcl_release, cases):
    """Issue 14 item 4: `api.cd(...)` is malformed: no call, no result, no tool message, and
    the environment as it was; the same call by the tool's plain name runs."""
    case = cases["multi_turn_base"][0]
    wrong = "api.cd(folder='document')"
    trajectory = run(bfcl_release, case, Texts({(0, 0): wrong, (1, 0): "tools['ls']()"}))
    for trace in trajectory.turns[:2]:
        [step] = trace.steps
        assert step.emission.parse == "malformed" and step.emission.tool_calls == []
        assert step.results == [] and trace.ended == "no_call"
    assert "tool" not in [m.role for m in trajectory.messages]
    right = run(bfcl_release, case, Texts({(0, 0): "cd(folder='document')"}))
    assert right.turns[0].steps[0].emission.tool_calls == [
        ToolCall(name="cd", arguments={"folder": "document"})]
    assert len(right.turns[0].steps[0].results) == 1


def test_a_dotted_call_runs_when_a_visible_tool_has_that_name(bfcl_release):
    case = next(c for c in load_cases(bfcl_release, "irrelevance")
                if any(doc["name"] == "math.sum" for doc in c.tools))
    trajectory = run(bfcl_release, case, Texts({(0, 0): "math.sum(numbers=[1, 2])"}))
    emission = trajectory.turns[0].steps[0].emission
    assert emission.parse == "ok" and [c.name for c in emission.tool_calls] == ["math.sum"]
    other = run(bfcl_release, case, Texts({(0, 0): "maths.sum(numbers=[1, 2])"}))
    assert other.turns[0].steps[0].emission.parse == "malformed"


def test_step_cap_ends_the_case(bfcl_release, cases):
    case = cases["multi_turn_base"][0]
    trajectory = run(bfcl_release, case, Looping())
    assert trajectory.outcome == "step_cap"
    assert len(trajectory.turns) == 1 and trajectory.turns[0].ended == "step_cap"
    assert len(trajectory.turns[0].steps) == 21  # BFCL quits once the count exceeds 20


@pytest.mark.parametrize(("exc", "outcome"), [
    (InfrastructureError("HTTP 503 after 5 retries"), "error"),
    (ContextOverflow("40000 tokens > 32768"), "context_overflow"),
])
def test_infrastructure_failures_are_outcomes_not_answers(bfcl_release, cases, exc, outcome):
    trajectory = run(bfcl_release, cases["multi_turn_base"][0], Failing(exc))
    assert trajectory.outcome == outcome and trajectory.error == str(exc)
    assert trajectory.turns[-1].ended == outcome and trajectory.turns[-1].steps == []
    assert [m.role for m in trajectory.messages].count("assistant") == 1


def test_unknown_policy_and_backend_are_clear_errors():
    with pytest.raises(InputError, match="^model 'x': unknown policy 'psychic' \\(known: "
                                         "always_ask, "):
        make_backend(ModelSpec(name="x", backend="policy", options={"policy": "psychic"}))
    with pytest.raises(InputError, match="^model 'x': unknown backend 'gpt' \\(known: "
                                         "llamacpp, openai, policy, replay, transformers\\)$"):
        make_backend(ModelSpec(name="x", backend="gpt"))


def test_batching_across_conversations_changes_nothing(bfcl_release):
    from toolcalib.generate import run_cases

    cases = load_cases(bfcl_release, "multi_turn_miss_func")[:6]
    env = lambda c: case_environment(c, bfcl_release)  # noqa: E731
    done = []
    one = list(run_cases(cases, policy("always_call"), BASELINE, env))
    many = list(run_cases(cases, policy("always_call"), BASELINE, env, batch_size=4,
                          on_done=done.append))
    assert many == one and [t.case_id for t in many] == [c.id for c in cases]
    assert sorted(t.case_id for t in done) == sorted(c.id for c in cases)


def test_pinned_case_ids_select_in_file_order_and_name_a_missing_id(cases):
    from toolcalib.jsonio import InputError
    from toolcalib.stages.generate import select

    base = cases["multi_turn_base"]
    picked = select(base, "c.jsonl", 1, [base[2].id, base[0].id])
    assert [c.id for c in picked] == [base[0].id, base[2].id]
    assert select(base, "c.jsonl", 2, None) == base[:2]
    with pytest.raises(InputError, match=r"c\.jsonl: no case with id nope"):
        select(base, "c.jsonl", None, [base[0].id, "nope"])


def test_trajectories_record_the_identity_without_machine_facts(bfcl_release, cases):
    backend = policy("oracle")
    plain = backend.identity()
    backend.identity = lambda: {**plain, "cpu_capability": "AVX2", "versions": {"torch": "x"}}
    trajectory = run(bfcl_release, cases["irrelevance"][0], backend)
    assert trajectory.model_identity == plain == {"backend": "policy", "policy": "oracle"}


def test_limit_zero_writes_no_trajectories_and_loads_no_model(bfcl_release, cases, tmp_path):
    from toolcalib.jsonio import write_jsonl
    from toolcalib.stages.generate import run as generate

    case_file = tmp_path / "cases.jsonl"
    write_jsonl(case_file, cases["irrelevance"])
    spec = ('{"name": "m", "backend": "transformers", '
            f'"options": {{"model_dir": "{tmp_path / "no-model"}"}}}}')
    out = tmp_path / "out.jsonl"
    generate(spec, "baseline", "bfcl", str(case_file), str(bfcl_release.wheel), str(out),
             limit=0, store=str(tmp_path / "store"))
    assert out.read_bytes() == b""
    with pytest.raises(InputError, match="no-model"):
        generate(spec, "baseline", "bfcl", str(case_file), str(bfcl_release.wheel), str(out),
                 limit=1, store=str(tmp_path / "store"))
