"""Context variants and their probes on real BFCL cases (reference policies as models), and
which variants each benchmark runs (a refused one stops `generate` before anything runs)."""

from __future__ import annotations

import json

import pytest

from toolcalib.backends.base import Request
from toolcalib.benchmarks import PLUGINS, get_benchmark
from toolcalib.benchmarks.bfcl.checker import score_case
from toolcalib.benchmarks.bfcl.gold import case_environment, gold_trace
from toolcalib.benchmarks.bfcl.plugin import load_cases
from toolcalib.classify.profiles import asks_user, get_profile
from toolcalib.classify.trajectory import classify_trajectory
from toolcalib.cli import main
from toolcalib.generate import run_case
from toolcalib.jsonio import dumps, parse_line
from toolcalib.probes import ProbeContext, sri_message, unsupported
from toolcalib.records import Case, Emission, ToolCall
from toolcalib.stages.generate import GATE_PROFILE
from toolcalib.variants import PERMISSION_PROMPT, VARIANTS, get_variant, refusal


class Scripted:
    """Answers each step from a script: (turn, step) -> emission; default: plain text."""

    name = "scripted"
    cacheable = False

    def __init__(self, script):
        self.script = script
        self.seen: list[Request] = []

    def identity(self):
        return {"backend": "test"}

    def generate_batch(self, requests):
        self.seen.extend(requests)
        return [self.script.get((r.turn, r.step), Emission(text="Okay.")) for r in requests]


def run(release, case, backend, variant):
    """The case as the generate stage runs it (the `sri-gate` probe reading with its gate)."""
    return run_case(case, backend, get_variant(variant), lambda c: case_environment(c, release),
                    gate=asks_user(GATE_PROFILE))


def test_system_permission_prepends_its_message(bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    backend = Scripted({})
    trajectory = run(bfcl_release, case, backend, "system-permission")
    assert backend.seen[0].messages[0].content == PERMISSION_PROMPT
    assert trajectory.messages[0].role == "system" and trajectory.variant == "system-permission"


def test_no_tools_visible_hides_tools_and_remaps_gold(bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_miss_param")[0]
    backend = Scripted({})
    trajectory = run(bfcl_release, case, backend, "no-tools-visible")
    assert all(request.tools == [] for request in backend.seen)
    adjusted = get_variant("no-tools-visible").adjust_case(case)
    assert {t.gold_action for t in adjusted.turns} == {"refuse", "ask"}
    assert adjusted.gold_action == "ask"  # miss_param keeps its ask
    rows = classify_trajectory(trajectory, adjusted, get_profile("paper"))
    assert {r.gold_action for r in rows if r.level == "turn"} == {"refuse", "ask"}
    read = parse_line(dumps(case), Case, "cases.jsonl", 1)  # what evaluate reads
    remapped = get_variant("no-tools-visible").adjust_gold(read)
    assert remapped == get_variant("no-tools-visible").adjust_gold(case)
    assert [t.gold_action for t in remapped.turns] == [t.gold_action for t in adjusted.turns]
    assert remapped.tools == case.tools and adjusted.tools == []


def test_sri_drops_the_halting_reply_and_retries_once_per_turn(bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    backend = Scripted({})
    trajectory = run(bfcl_release, case, backend, "sri")
    for trace in trajectory.turns:
        assert [s.dropped for s in trace.steps] == [True, False]
    fired = [i for i in trajectory.interventions if i.fired]
    assert len(fired) == len(case.turns) and {i.probe for i in fired} == {"sri"}
    retry = backend.seen[1].messages[-1]
    assert retry.role == "user" and retry.content.startswith("Before you answer, reconcile")
    assert "Current request: " + case.turns[0].messages[0].content in retry.content
    # the dropped reply is not part of the conversation, and not of the turn's class
    assert [m.role for m in backend.seen[1].messages].count("assistant") == 0
    rows = classify_trajectory(trajectory, case, get_profile("paper"))
    assert {r.level for r in rows} == {"dropped", "emission", "turn"}
    assert sum(r.probes_fired for r in rows if r.level == "turn") == len(case.turns)


def test_sri_gate_lets_a_question_stand(bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_miss_param")[0]
    ask = Emission(text="Which folder do you mean?")
    backend = Scripted({(t.index, 0): ask for t in case.turns})
    trajectory = run(bfcl_release, case, backend, "sri-gate")
    assert not any(i.fired for i in trajectory.interventions)
    assert {i.reason.split(" (")[0] for i in trajectory.interventions} == {"reply asks the user"}
    assert all(len(t.steps) == 1 and not t.steps[0].dropped for t in trajectory.turns)
    with pytest.raises(ValueError, match="gate"):  # no classifier of its own to fall back on
        run_case(case, backend, get_variant("sri-gate"),
                 lambda c: case_environment(c, bfcl_release))


def test_cri_requeries_before_an_unsupported_call_and_never_runs_it(bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    invented = Emission(tool_calls=[ToolCall(name="cd", arguments={"folder": "zzz_unheard"})],
                        structured=True)
    backend = Scripted({(0, 0): invented})
    trajectory = run(bfcl_release, case, backend, "cri-retry")
    first = trajectory.turns[0].steps
    assert first[0].dropped and first[0].results == []
    assert "appears nowhere" in trajectory.interventions[0].reason
    assert backend.seen[1].messages[-1].content.startswith("Do not call a tool in this turn")
    # the dropped call never ran: scoring sees no call in turn 0
    score = score_case(case, trajectory, gold_trace(case, bfcl_release), bfcl_release)
    assert score.error_type == "multi_turn:empty_turn_model_response"


def test_unsupported_reasons():
    doc = {"name": "mv", "parameters": {"required": ["source", "destination"], "properties": {
        "source": {"type": "string"}, "destination": {"type": "string", "enum": ["temp"]}}}}
    context = ProbeContext(requests=["move report.pdf to temp"], visible={"mv": doc})
    ok = ToolCall(name="mv", arguments={"source": "report.pdf", "destination": "temp"})
    assert unsupported(ok, context) is None
    assert "not among" in unsupported(ToolCall(name="rm"), context)
    assert "missing" in unsupported(
        ToolCall(name="mv", arguments={"source": "report.pdf"}), context)
    guessed = ToolCall(name="mv", arguments={"source": "x.pdf", "destination": "temp"})
    assert "'source'" in unsupported(guessed, context)
    context.observed.append((ToolCall(name="ls"), "x.pdf"))
    assert unsupported(guessed, context) is None
    assert "(none)" in sri_message(ProbeContext(requests=["only"]))


TAU2_REFUSED = "(tau2 runs: baseline, system-permission, no-tools-visible)"


def test_each_benchmark_declares_the_variants_it_runs():
    assert get_benchmark("bfcl").variants == tuple(VARIANTS)
    assert get_benchmark("tau2").variants == ("baseline", "system-permission", "no-tools-visible")
    for name in PLUGINS:
        assert set(get_benchmark(name).variants) <= set(VARIANTS)
    bfcl, tau2 = get_benchmark("bfcl").variants, get_benchmark("tau2").variants
    assert refusal("m", "openai", "sri", "bfcl", bfcl) is None
    assert refusal("m", "openai", "no-tools-visible", "tau2", tau2) is None
    assert refusal("m", "openai", "cri-retry", "tau2", tau2) == (
        f"model 'm': variant 'cri-retry' does not run on benchmark 'tau2' {TAU2_REFUSED}")
    assert refusal("p", "replay", "baseline", "tau2", tau2) is None
    assert refusal("p", "replay", "system-permission", "bfcl", bfcl) == (
        "model 'p': variant 'system-permission' does not run on benchmark 'bfcl' (backend "
        "'replay' runs: baseline)")


@pytest.mark.parametrize(("backend", "variant", "benchmark", "line"), [
    ("policy", "sri", "tau2", f"model 'p': variant 'sri' does not run on benchmark 'tau2' "
                              f"{TAU2_REFUSED}"),
    ("replay", "sri", "bfcl", "model 'p': variant 'sri' does not run on benchmark 'bfcl' "
                              "(backend 'replay' runs: baseline)"),
])
def test_generate_refuses_a_variant_its_benchmark_does_not_run(tmp_path, capsys, backend,
                                                               variant, benchmark, line):
    """One line, exit status 2, before any backend is built or any file read."""
    spec = json.dumps({"name": "p", "backend": backend, "options": {}})
    out = tmp_path / "out.jsonl"
    status = main(["generate", "--model-spec", spec, "--variant", variant, "--benchmark",
                   benchmark, "--cases", str(tmp_path / "none.jsonl"), "--source",
                   str(tmp_path / "none.whl"), "--out", str(out)])
    assert status == 2
    assert capsys.readouterr().err == f"toolcalib generate: error: {line}\n"
    assert not out.exists()
