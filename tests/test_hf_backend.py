"""The transformers backend: tool-doc and message conversion, the prefix store, and the real
SmolLM2-135M (fetched from its pinned package, verified, converted) on real BFCL cases."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import msgspec  # noqa: E402
import torch  # noqa: E402

from toolcalib.backends import make_backend  # noqa: E402
from toolcalib.backends.base import ContextOverflow, Request  # noqa: E402
from toolcalib.backends.hf.engine import (  # noqa: E402
    PrefixStore,
    Sequence,
    lookup_draft,
    prompt_cuts,
)
from toolcalib.backends.hf.prompt import PROMPT_VERSION, openai_tool, template_messages  # noqa: E402
from toolcalib.benchmarks.bfcl.gold import case_environment  # noqa: E402
from toolcalib.benchmarks.bfcl.plugin import SCRIPTED, load_cases  # noqa: E402
from toolcalib.config import ModelSpec  # noqa: E402
from toolcalib.fetch import FetchError  # noqa: E402
from toolcalib.generate import run_case, run_cases  # noqa: E402
from toolcalib.jsonio import InputError, from_data  # noqa: E402
from toolcalib.models import SOURCES, ModelSource, fetch_model, read_manifest  # noqa: E402
from toolcalib.records import Emission, Message, ToolCall, docs_json  # noqa: E402
from toolcalib.variants import get_variant  # noqa: E402

BASELINE = get_variant("baseline")
SMOLLM2 = SOURCES["smollm2-135m"]

DOC = {
    "name": "place_order",
    "description": "Place an order.",
    "parameters": {"type": "object", "required": ["symbol"], "properties": {
        "symbol": {"type": "string", "description": "Stock symbol."},
        "price": {"type": "number", "description": "Limit price."},
        "legs": {"type": "array", "items": {"type": "object", "properties": {
            "qty": {"type": "integer"},
            "weights": {"type": "array", "items": {"type": "number"}}}}},
        "extra": {"type": "string"}}},
    "response": {"type": "object", "properties": {"order_id": {"type": "integer"}}},
}
"""A tool as cases carry it: canonical JSON schema (BFCL's docs are converted at normalization)."""
BFCL_LOOP = SCRIPTED
"""BFCL's loop: its step cap, its tool docs' own members marked (`Request.extras`)."""


def test_tools_pass_through_unconverted():
    tool = openai_tool(DOC, ())
    assert tool == {"type": "function", "function": DOC}
    assert list(openai_tool(DOC, ("response",))["function"]) == [
        "name", "description", "parameters"]
    assert "response" in DOC


def test_response_schema_is_dropped_by_default():
    assert "response" not in openai_tool(DOC, ("response",))["function"]


def test_prompt_mode_puts_tools_in_the_system_prompt_and_results_in_user_turns():
    tools = [openai_tool(DOC, ("response",))]
    call = ToolCall(name="place_order", arguments={"symbol": "X"})
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="Buy X"),
                Message(role="assistant", content="raw <tool_call> text", tool_calls=[call, call]),
                Message(role="tool", name="place_order", content="{'order_id': 1}"),
                Message(role="tool", name="place_order", content="{'order_id': 2}"),
                Message(role="assistant", tool_calls=[call])]
    out = template_messages(messages, tools, "prompt")
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant"]
    assert out[0]["content"].startswith("Be brief.\n\n# Tools")
    assert '"place_order"' in out[0]["content"]
    assert out[2]["content"] == "raw <tool_call> text"
    assert out[3]["content"] == ("<tool_response>\n{'order_id': 1}\n</tool_response>\n"
                                 "<tool_response>\n{'order_id': 2}\n</tool_response>")
    assert out[4]["content"] == ('<tool_call>\n{"name": "place_order", "arguments": '
                                 '{"symbol": "X"}}\n</tool_call>')
    native = template_messages(messages, tools, "native")
    assert [m["role"] for m in native] == ["system", "user", "assistant", "tool", "tool",
                                           "assistant"]
    assert native[5]["tool_calls"][0]["function"] == {"name": "place_order",
                                                      "arguments": {"symbol": "X"}}


def test_model_source_is_strict():
    with pytest.raises(ValueError, match="2 members for 1 packages"):
        ModelSource(packages=["a==1"], member=["x", "y"], sha256="0" * 64, gguf_file="m.gguf")
    with pytest.raises(ValueError, match="pinned"):
        ModelSource(packages=["a"], member="x", sha256="0" * 64, gguf_file="m.gguf")
    good = {"packages": ["a==1"], "member": "x", "sha256": "0" * 64, "gguf_file": "m.gguf"}
    with pytest.raises(InputError, match="--source-json: field 'url': .*unknown field"):
        from_data({**good, "url": "u"}, ModelSource, "--source-json")
    with pytest.raises(InputError, match="field 'gguf_file': Expected `str` matching regex"):
        from_data({**good, "gguf_file": "m/x.gguf"}, ModelSource, "--source-json")
    with pytest.raises(InputError, match="field '<record>': 2 members for 1 packages"):
        from_data({**good, "member": ["x", "y"]}, ModelSource, "--source-json")


def _seq(tokens: list[int]) -> Sequence:
    prompt = torch.tensor(tokens)
    return Sequence(prompt, len(tokens), (1, 1, 2), prompt_cuts(prompt, 4, torch.tensor([9])))


def test_prompts_are_cut_at_chunk_multiples_and_message_starts():
    assert prompt_cuts(torch.tensor([1, 2, 9, 3, 4, 5, 9, 6, 7]), 4, torch.tensor([9])) == [
        0, 2, 4, 6, 8, 9]
    assert prompt_cuts(torch.tensor([9, 1]), 4, torch.tensor([9])) == [0, 2]


def test_drafts_continue_the_latest_earlier_occurrence_of_the_tail():
    context = torch.tensor([5, 1, 2, 3, 7, 8, 1, 2, 3, 4, 6, 0, 1, 2, 3])
    assert lookup_draft(context, 3, 2) == [4, 6]
    # past the end of the context the draft continues itself: the pattern repeats
    assert lookup_draft(context, 3, 9) == [4, 6, 0, 1, 2, 3, 4, 6, 0]
    assert lookup_draft(context, 3, 0) == []
    assert lookup_draft(torch.tensor([1, 2, 3, 9, 2, 3]), 3, 4) == []
    assert lookup_draft(torch.tensor([4, 4, 4, 4]), 3, 5) == [4, 4, 4, 4, 4]
    assert lookup_draft(torch.tensor([1, 2]), 3, 5) == []


def test_prefix_store_reuses_up_to_a_cut_of_both_prompts():
    store = PrefixStore(budget_tokens=12)
    first = _seq([1, 2, 9, 3, 4, 5, 9, 6, 7])
    store.add(first)
    extended = _seq([1, 2, 9, 3, 4, 5, 9, 6, 7, 8, 9, 1])
    assert store.lookup(extended.prompt, extended.cuts) == (first, 8)
    branch = _seq([1, 2, 9, 3, 4, 5, 9, 0])
    assert store.lookup(branch.prompt, branch.cuts) == (first, 6)
    # 9 at position 6 cuts `other` but not `first` there: only the shared cut 4 is reusable
    other = _seq([1, 2, 9, 3, 4, 5, 8, 1])
    assert store.lookup(other.prompt, other.cuts) == (first, 4)
    same = _seq([1, 2, 9, 3, 4, 5, 9, 6, 7])
    assert store.lookup(same.prompt, same.cuts) == (first, 8)
    assert store.lookup(torch.tensor([5, 1, 2]), [0, 3]) == (None, 0)
    store.add(extended)
    assert list(store.entries.values()) == [extended]
    unrelated = _seq([7] * 12)
    store.add(unrelated)
    assert list(store.entries.values()) == [unrelated]


def _backend(model_dir, **options):
    return make_backend(ModelSpec(name="smollm2", backend="transformers", options={
        "model_dir": str(model_dir), "tools_mode": "prompt", "dtype": "float32", **options}))


def _environment(release):
    return lambda case: case_environment(case, release)


@pytest.mark.slow
def test_real_case_gives_a_well_formed_trajectory(smollm2_dir, bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    backend = _backend(smollm2_dir, max_new_tokens=32)
    identity = backend.identity()
    assert identity["gguf_sha256"] == SMOLLM2.sha256
    assert identity["prompt_version"] == PROMPT_VERSION and identity["keep_response"] is False
    assert identity["context_window"] == 8192
    trajectory = run_case(case, backend, BASELINE, _environment(bfcl_release), loop=BFCL_LOOP)
    assert trajectory.outcome in ("completed", "step_cap")
    assert len(trajectory.turns) == len(case.turns)
    emissions = [step.emission for turn in trajectory.turns for step in turn.steps]
    for emission in emissions:
        assert emission.finish_reason in ("stop", "length")
        assert 0 < emission.output_tokens <= 32 and emission.input_tokens > 3000
        assert emission.parse in ("none", "ok", "malformed")
    assert [m.role for m in trajectory.messages].count("user") >= len(case.turns)
    assert backend.engine.stats.reused_tokens > 0


@pytest.mark.slow
def test_weight_major_linears_compute_the_same_layer(smollm2_dir):
    backend = _backend(smollm2_dir, max_new_tokens=4)
    plain = _backend(smollm2_dir, max_new_tokens=4, weight_major=False)
    assert backend.identity()["weight_major"] is True
    assert plain.identity()["weight_major"] is False
    kinds = {type(m).__name__ for m in backend.model.modules() if isinstance(m, torch.nn.Linear)}
    assert kinds == {"_WeightMajorLinear"}
    assert all(type(m) is torch.nn.Linear
               for m in plain.model.modules() if isinstance(m, torch.nn.Linear))
    head = backend.model.get_output_embeddings()
    x = torch.randn(3, 2, head.in_features)
    with torch.inference_mode():
        assert head(x).shape == (3, 2, head.out_features)
        torch.testing.assert_close(head(x), torch.nn.functional.linear(x, head.weight),
                                   rtol=1e-4, atol=1e-4)
        assert head(x).is_contiguous()  # a transposed output slows the next GEMM and SDPA
    assert backend.identity()["engine_numerics"] == plain.identity()["engine_numerics"] >= 2


def _position_independent(model, rows: int) -> bool:
    """Whether this CPU's kernels give a row of a linear layer the same bits at any position of
    a `rows`-row input (what makes fixed-width decoding batch-invariant)."""
    linears = [model.get_output_embeddings(),
               next(m for m in model.modules() if isinstance(m, torch.nn.Linear))]
    with torch.inference_mode():
        for linear in linears:
            row = torch.randn(linear.in_features, dtype=linear.weight.dtype)
            outs = []
            for position in range(rows):
                x = torch.randn(rows, 1, linear.in_features, dtype=linear.weight.dtype)
                x[position, 0] = row
                outs.append(linear(x)[position, 0])
            if any(not torch.equal(out, outs[0]) for out in outs):
                return False
    return True


@pytest.mark.slow
def test_prefix_reuse_and_batching_do_not_change_emissions(smollm2_dir, bfcl_release):
    base = load_cases(bfcl_release, "multi_turn_base")
    tools = base[0].tools[:6]
    cases = [c.replace(tools_json=docs_json(tools), turns=c.turns[:2]) for c in base[:3]]

    def run(batch_size: int, **extra):
        backend = _backend(smollm2_dir, max_new_tokens=24, prefill_chunk=64, decode_rows=2,
                           **extra)
        trajectories = list(run_cases(cases, backend, BASELINE, _environment(bfcl_release),
                                      batch_size=batch_size, loop=BFCL_LOOP))
        emissions = [[s.emission for turn in t.turns for s in turn.steps] for t in trajectories]
        return [(t.messages, e) for t, e in zip(trajectories, emissions, strict=True)], backend

    reused, backend = run(1)
    plain, plain_backend = run(1, prefix_cache_tokens=0)
    assert backend.engine.stats.reused_tokens > 0
    assert plain_backend.engine.stats.reused_tokens == 0
    assert reused == plain
    batched, batched_backend = run(3)
    assert batched_backend.engine.stats.decode_steps < backend.engine.stats.decode_steps
    if not _position_independent(backend.model, rows=2):
        pytest.skip("this CPU's matmul gives a row different bits at different positions: "
                    "batched decoding may differ from unbatched in the last bits")
    assert batched == reused


@pytest.mark.slow
def test_drafts_are_verified_and_change_no_token(smollm2_dir):
    """Prompt-lookup drafts cut the forwards where the model copies its context; every kept
    token is still greedy's own (here: equal to token-by-token decoding)."""
    text = "move_file(source='final_report.pdf', destination='temp')"
    chats = [[{"role": "user", "content": "Write the word 'cat' ten times."}],
             [{"role": "user", "content": f"Repeat this line three times: {text}"}]]
    results = []
    for draft_tokens in (0, 16):
        backend = _backend(smollm2_dir, draft_tokens=draft_tokens)
        prompts = [backend.tokenizer.apply_chat_template(c, add_generation_prompt=True,
                                                         tokenize=True, return_dict=False)
                   for c in chats]
        done = backend.engine.generate(prompts, 48)
        results.append(([s.generated for s in done], backend.engine.stats))
    (plain, plain_stats), (drafted, stats) = results
    assert plain_stats.draft_forwards == 0
    assert drafted == plain
    assert stats.accepted_tokens > 0 and stats.decode_steps < plain_stats.decode_steps


@pytest.mark.slow
def test_shared_prefix_files_serve_other_engines_and_change_no_token(smollm2_dir, bfcl_release,
                                                                      tmp_path):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    case = case.replace(turns=case.turns[:1])

    def run(**extra):
        backend = _backend(smollm2_dir, max_new_tokens=8, **extra)
        trajectory = run_case(case, backend, BASELINE, _environment(bfcl_release), loop=BFCL_LOOP)
        return [s.emission for s in trajectory.turns[0].steps], backend.engine.stats

    plain, _ = run()
    first, first_stats = run(shared_prefix_dir=str(tmp_path))
    [saved] = tmp_path.glob("*.pt")
    second, second_stats = run(shared_prefix_dir=str(tmp_path))
    assert first_stats.shared_tokens == 0 and second_stats.shared_tokens > 1000
    assert first == second == plain
    saved.write_bytes(b"torn")
    third, third_stats = run(shared_prefix_dir=str(tmp_path))
    assert third_stats.shared_tokens == 0 and third == plain
    assert run(shared_prefix_dir=str(tmp_path))[1].shared_tokens == second_stats.shared_tokens


@pytest.mark.slow
def test_context_overflow_is_an_outcome_never_a_truncation(smollm2_dir, bfcl_release):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    backend = _backend(smollm2_dir, max_new_tokens=8, context_window=600)
    trajectory = run_case(case, backend, BASELINE, _environment(bfcl_release), loop=BFCL_LOOP)
    assert trajectory.outcome == "context_overflow"
    assert trajectory.turns[0].ended == "context_overflow"
    assert "exceeds the context window of 600" in trajectory.error
    short = Request(messages=[Message(role="user", content="Hi")], tools=[], case=case, turn=0,
                    step=0)
    long = Request(messages=list(case.turns[0].messages), tools=case.tools, case=case, turn=0,
                   step=0)
    answers = backend.generate_batch([short, long])
    assert isinstance(answers[0], Emission) and answers[0].output_tokens > 0
    assert isinstance(answers[1], ContextOverflow)


@pytest.mark.slow
def test_native_mode_needs_a_template_that_renders_tools(smollm2_dir):
    with pytest.raises(InputError, match="does not render tools; use tools_mode 'prompt'"):
        _backend(smollm2_dir, tools_mode="native")


@pytest.mark.slow
def test_sha_mismatch_leaves_nothing(tmp_path):
    wrong = msgspec.structs.replace(SMOLLM2, sha256="0" * 64)
    with pytest.raises(FetchError, match="sha256 mismatch for SmolLM2-135M-Instruct.Q4_1.gguf"):
        fetch_model(wrong, tmp_path / "models" / "smollm2")
    assert list((tmp_path / "models").iterdir()) == []


@pytest.mark.slow
def test_conversion_is_bit_reproducible(smollm2_dir, tmp_path):
    again = read_manifest(fetch_model(SMOLLM2, tmp_path / "smollm2"))
    first = read_manifest(smollm2_dir)
    if first.versions != again.versions:
        pytest.skip(f"converted with other versions: {first.versions}")
    assert again.files == first.files
    assert sorted(p.name for p in (tmp_path / "smollm2").iterdir()) == sorted(
        [*first.files, "toolcalib-model.json"])
