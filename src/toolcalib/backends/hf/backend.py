"""`transformers` backend: a converted local model (see `toolcalib.models`), greedy decoding,
steps of many conversations decoded as one batch, KV caches of shared prompt prefixes reused.

Options: `model_dir` (required), `tools_mode` ('native' | 'prompt'), `max_new_tokens` (256),
`batch_size` (most requests prefilled and decoded as one group; default all of a call's),
`decode_rows` (rows of every decode forward, idle rows padding it: 8), `dtype` (compute dtype:
`auto`, the default, is bfloat16 where the CPU computes it natively (AVX512-BF16 or AMX) and
float32 elsewhere; the resolved dtype enters the identity), `linear` (`float`, or `int8`: integer
linear layers, see `hf.int8`), `kernels` (`native`, or `portable`: the same code, hence bits,
on every x86-64 CPU with AVX2, Intel or AMD, float linear layers on oneDNN; see `hf.kernels`
and `hf.onednn`), `threads` (torch threads: 1,
see below), `keep_response` (show the members of the tool docs a benchmark marks as its own,
`Request.extras`: BFCL's `response` schema; default False: it is a third of a BFCL prompt,
OpenAI-style servers drop it, and SmolLM2's 8k window needs the room), `prefill_chunk` (256),
`prefix_cache_tokens` (positions of KV kept for reuse: 65536; 0 disables), `context_window`
(default the model's `max_position_embeddings`; may only shrink it), `weight_major` (linear
layers as `W @ xᵀ`, faster for decode's few rows: True; native kernels only, `portable` has its
own split, see `hf.onednn`), `draft_tokens` (most tokens of a prompt-lookup draft verified in
one forward: 16; 0 decodes token by token; see `hf.engine`), `shared_prefix_dir` (folder where
the KV of long system messages is kept for other processes of the same model: none; see
`hf.shared_prefixes`).

Emissions depend on neither batching nor reuse (see `hf.engine`), so `batch_size`,
`prefix_cache_tokens` and `shared_prefix_dir` stay out of the identity; `prefill_chunk`, the cut
tokens (`prefill_cuts`), `decode_rows`, `weight_major`, `draft_tokens`, `threads` (kernels may
split work differently), `linear` and `kernels` when not the default (so older identities keep
their keys) and the engine's `NUMERICS` version enter it, and so do the kernel capability torch
dispatches to (AVX2, AVX512, ...) and, under `native` kernels, the CPU's vendor (MKL's code path
follows it): the bits of a float computation, hence greedy emissions, may differ between them.
One thread by default: on a shared 2-core machine a 2-thread forward waits for a descheduled
thread at every op (measured: 13.6 s vs 2.8 s of CPU for the same six Qwen decode steps with
other processes running), so the workflow runs two single-threaded model jobs side by side.
The backend returns the raw generated text; calls are decoded by the harness.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.backends.hf.kernels import check, cpu_vendor
from toolcalib.backends.hf.options import Options
from toolcalib.config import ModelSpec, model_options
from toolcalib.jsonio import dumps
from toolcalib.models import read_manifest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from toolcalib.backends.hf.engine import ATTENTION, NUMERICS, Engine, weight_major  # noqa: E402
from toolcalib.backends.hf.int8 import int8_linear  # noqa: E402
from toolcalib.backends.hf.onednn import onednn_linear  # noqa: E402
from toolcalib.backends.hf.prompt import (  # noqa: E402
    PROMPT_VERSION,
    check_tools_mode,
    emission,
    message_start_ids,
    request_prompt,
)
from toolcalib.backends.hf.shared_prefixes import SharedPrefixes  # noqa: E402

SEED = 0
# transformers declares `disable_progress_bar` without annotations.
hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


class TransformersBackend:
    cacheable = True

    def __init__(self, name: str, options: Options):
        self.name, self.options = name, options
        self.manifest = read_manifest(options.model_dir)
        torch.set_num_threads(options.threads)
        check(name, options.kernels, torch.backends.cpu.get_cpu_capability())
        self.dtype = resolve_dtype(options.dtype, options.kernels)
        self.tokenizer = AutoTokenizer.from_pretrained(options.model_dir, local_files_only=True)
        check_tools_mode(self.tokenizer, options.tools_mode, name, options.model_dir)
        # transformers types the loaded model as its `_BaseModelWithGenerate`, whose `eval` has
        # no annotations (torch's `Module.eval`, which runs, has).
        self.model = AutoModelForCausalLM.from_pretrained(
            options.model_dir, dtype=getattr(torch, self.dtype), local_files_only=True,
            attn_implementation=ATTENTION).eval()  # type: ignore[no-untyped-call]
        if options.linear == "int8":
            int8_linear(self.model)
        elif options.kernels == "portable":
            onednn_linear(self.model)
        elif options.weight_major:
            weight_major(self.model)
        limit = self.model.config.max_position_embeddings
        self.window = min(options.context_window or limit, limit)
        stop_ids = _stop_ids(self.model, self.tokenizer)
        self.cut_ids = message_start_ids(self.tokenizer, stop_ids)
        self.engine = Engine(self.model, stop_ids, options.prefill_chunk,
                             options.prefix_cache_tokens, options.decode_rows, self.cut_ids,
                             options.draft_tokens)
        if options.shared_prefix_dir:
            self.engine.shared = SharedPrefixes(
                Path(options.shared_prefix_dir), dumps(self.identity()),
                self.engine.cut_ids, min_tokens=4 * options.prefill_chunk)

    def work_summary(self) -> str:
        """What the engine computed and how fast (for the rule log; never an artifact)."""
        s = self.engine.stats
        fresh = s.prompt_tokens - s.reused_tokens
        per_step = s.decode_seconds / max(s.decode_steps, 1)
        return (f"{s.prompt_tokens} prompt tokens ({s.reused_tokens} reused, {s.shared_tokens} "
                f"from shared files), {fresh} prefilled "
                f"in {s.prefill_seconds:.1f} s ({fresh / max(s.prefill_seconds, 1e-9):.0f} tok/s);"
                f" {s.generated_tokens} tokens in {s.decode_steps} decode steps, "
                f"{s.decode_seconds:.1f} s ({per_step:.3f} s/step); {s.draft_forwards} draft "
                f"forwards, {s.accepted_tokens} of {s.drafted_tokens} drafted tokens accepted, "
                f"{s.draft_seconds:.1f} s")

    def identity(self) -> dict[str, Any]:
        o = self.options
        return {"backend": "transformers", "gguf_sha256": self.manifest.gguf_sha256,
                "weights_dtype": self.manifest.dtype, "dtype": self.dtype,
                "tools_mode": o.tools_mode,
                "prompt_version": PROMPT_VERSION if o.tools_mode == "prompt" else None,
                "keep_response": o.keep_response, "max_new_tokens": o.max_new_tokens,
                "decoding": "greedy", "prefill_chunk": o.prefill_chunk,
                "prefill_cuts": self.tokenizer.convert_ids_to_tokens(sorted(self.cut_ids)),
                "decode_rows": o.decode_rows, "threads": o.threads,
                "weight_major": o.weight_major, "draft_tokens": o.draft_tokens,
                "engine_numerics": NUMERICS,
                **({"linear": o.linear} if o.linear != "float" else {}),
                "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                **({"cpu_vendor": cpu_vendor()} if o.kernels == "native"
                   else {"kernels": o.kernels}),
                "context_window": self.window,
                "versions": {n: version(n) for n in ("torch", "transformers")}}

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        torch.manual_seed(SEED)
        o = self.options
        answers: dict[int, Answer] = {}
        pending: list[tuple[int, list[int]]] = []
        for index, request in enumerate(requests):
            prompt = request_prompt(self.tokenizer, request, o.tools_mode, o.keep_response,
                                    o.max_new_tokens, self.window)
            if isinstance(prompt, InfrastructureError):
                answers[index] = prompt
            else:
                pending.append((index, prompt))
        size = o.batch_size or max(len(pending), 1)
        for start in range(0, len(pending), size):
            group = pending[start:start + size]
            done = self.engine.generate([p for _, p in group], o.max_new_tokens)
            for (index, prompt), seq in zip(group, done, strict=True):
                answers[index] = emission(self.tokenizer, prompt, seq.generated, seq.stopped)
        return [answers[index] for index in range(len(requests))]


def resolve_dtype(requested: str, kernels: str = "native") -> str:
    """The compute dtype: `auto` is bfloat16 where the kernels compute it natively (AVX512-BF16
    or AMX: oneDNN's bfloat16 GEMM, 2-2.5x float32's on one thread here) and float32 elsewhere
    (without it bfloat16 is emulated, 6x slower on AVX2) and always under `kernels: portable`
    (the AVX2 family, `hf.kernels`)."""
    if requested != "auto":
        return requested
    native = kernels == "native" and (torch.cpu._is_avx512_bf16_supported()
                                      or torch.cpu._is_amx_tile_supported())
    return "bfloat16" if native else "float32"


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    """End of turn or text: the EOS of the generation config, the model config and the
    tokenizer, and `<|endoftext|>` where the vocabulary has it (Qwen's GGUF names only
    `<|im_end|>`)."""
    ids: set[int | None] = {tokenizer.get_vocab().get("<|endoftext|>")}
    for eos in (model.generation_config.eos_token_id, model.config.eos_token_id,
                tokenizer.eos_token_id):
        ids.update(eos if isinstance(eos, list) else [eos])
    return {i for i in ids if i is not None}


def make(spec: ModelSpec) -> TransformersBackend:
    return TransformersBackend(spec.name, model_options(Options, spec))
