"""`llamacpp` backend: the pinned GGUF run in-process by llama.cpp (llama-cpp-python), greedy,
one request after another.

The model folder is the `model` rule's GGUF form (`toolcalib model --keep-gguf`: the verified
GGUF and the tokenizer saved from it, see `toolcalib.models`). Prompts are rendered, checked
against the context window and decoded by the `transformers` backend's code (`hf.prompt`: the
chat template's tools in `native` mode, the versioned tool prompt in `prompt` mode) with that
tokenizer, so both backends give llama.cpp and torch the same prompt tokens; generation stops at
a token llama.cpp counts as end of generation. The harness parses calls from the raw text.

Options: `model_dir` (required), `tools_mode` ('native' | 'prompt'), `max_new_tokens` (256),
`threads` (llama.cpp threads: 1), `n_batch` (most tokens per prefill forward: 512),
`flash_attn` (False), `context_window` (default the GGUF's trained context; may only shrink it),
`keep_response` (as `transformers`).

Determinism: a prompt is prefilled in chunks between cuts (every multiple of `n_batch` and every
message start, `hf.prompt.chunk_cuts`), and the KV of the previous prompt is kept only up to a
cut of both, so a prompt runs the same forwards, hence gives the same bits, whatever ran before
it; decoding is one token per forward. The bits of llama.cpp's kernels may depend on the thread
count, the batch shapes and the CPU features it was built for: `threads`, `n_batch`,
`flash_attn`, the KV cache type, the context window, the cut tokens, llama.cpp's CPU features and
its version enter the identity.

Limits: one KV sequence and no batching: requests run one by one and a prompt reuses only the
previous request's KV (a model's `batch_size: 1` keeps a conversation's steps together); no
shared prefix files; no prompt-lookup drafts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from importlib.metadata import version
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from toolcalib.backends.base import Answer, InfrastructureError, Request
from toolcalib.backends.hf.prompt import (
    PROMPT_VERSION,
    check_tools_mode,
    chunk_cuts,
    emission,
    message_start_ids,
    request_prompt,
)
from toolcalib.backends.llamacpp_options import LlamaCppOptions
from toolcalib.config import ModelSpec, model_options
from toolcalib.jsonio import InputError
from toolcalib.models import GGUF_DTYPE, read_manifest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import llama_cpp  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

KV_CACHE = "f16"
"""llama.cpp's default key and value cache type (not configurable here)."""
SEED = 0


class LlamaCppBackend:
    cacheable = True

    def __init__(self, name: str, options: LlamaCppOptions):
        self.name, self.options = name, options
        self.manifest = read_manifest(options.model_dir)
        if self.manifest.dtype != GGUF_DTYPE:
            raise InputError(f"model '{name}': {options.model_dir} holds converted weights, not "
                             "the GGUF (`toolcalib model --keep-gguf` builds the folder)")
        self.tokenizer = AutoTokenizer.from_pretrained(options.model_dir, local_files_only=True)
        check_tools_mode(self.tokenizer, options.tools_mode, name, options.model_dir)
        self.llm = llama_cpp.Llama(
            str(Path(options.model_dir) / self.manifest.gguf_file),
            n_ctx=options.context_window or 0, n_batch=options.n_batch,
            n_ubatch=options.n_batch, n_threads=options.threads,
            n_threads_batch=options.threads, flash_attn=options.flash_attn, seed=SEED,
            verbose=False)
        self.window = self.llm.context_params.n_ctx  # llama.cpp may allocate a bit more
        self.chunk = self.llm.n_batch  # `n_batch`, or the window if smaller
        if self.window > self.llm._model.n_ctx_train():
            raise InputError(f"model '{name}': context_window {self.window} exceeds the GGUF's "
                             f"trained context of {self.llm._model.n_ctx_train()}")
        vocab = self.llm._model.vocab
        self.stop_ids = {i for i in range(self.llm.n_vocab())
                         if llama_cpp.llama_vocab_is_eog(vocab, i)}
        self.cut_ids = message_start_ids(self.tokenizer, self.stop_ids)
        self.held: list[int] = []
        """The prompt whose KV llama.cpp holds (positions up to `self.held_cuts` reusable)."""
        self.held_cuts: set[int] = set()
        self.stats = {"prompt_tokens": 0, "reused_tokens": 0, "prefill_seconds": 0.0,
                      "generated_tokens": 0, "decode_seconds": 0.0}

    def identity(self) -> dict[str, Any]:
        o = self.options
        return {"backend": "llamacpp", "gguf_sha256": self.manifest.gguf_sha256,
                "tools_mode": o.tools_mode,
                "prompt_version": PROMPT_VERSION if o.tools_mode == "prompt" else None,
                "keep_response": o.keep_response, "max_new_tokens": o.max_new_tokens,
                "decoding": "greedy", "threads": o.threads, "n_batch": self.chunk,
                "flash_attn": o.flash_attn, "kv_cache": KV_CACHE,
                "prefill_cuts": self.tokenizer.convert_ids_to_tokens(sorted(self.cut_ids)),
                "context_window": self.window, "cpu_capability": cpu_features(),
                "versions": {n: version(n) for n in ("llama_cpp_python", "transformers")}}

    def work_summary(self) -> str:
        """What llama.cpp computed and how fast (for the rule log; never an artifact)."""
        s = self.stats
        fresh = s["prompt_tokens"] - s["reused_tokens"]
        return (f"{s['prompt_tokens']} prompt tokens ({s['reused_tokens']} reused), {fresh} "
                f"prefilled in {s['prefill_seconds']:.1f} s "
                f"({fresh / max(s['prefill_seconds'], 1e-9):.0f} tok/s); "
                f"{s['generated_tokens']} tokens decoded in {s['decode_seconds']:.1f} s "
                f"({s['generated_tokens'] / max(s['decode_seconds'], 1e-9):.1f} tok/s)")

    def generate_batch(self, requests: list[Request],
                       on_answer: Callable[[int, Answer], None] | None = None) -> list[Answer]:
        """Each request in turn; `on_answer` (the store's commit) hears each answer at once."""
        o = self.options
        answers: list[Answer] = []
        for index, request in enumerate(requests):
            prompt = request_prompt(self.tokenizer, request, o.tools_mode, o.keep_response,
                                    o.max_new_tokens, self.window)
            answer: Answer = prompt if isinstance(prompt, InfrastructureError) else \
                self._answer(prompt)
            if on_answer is not None:
                on_answer(index, answer)
            answers.append(answer)
        return answers

    def _answer(self, prompt: list[int]) -> Answer:
        try:
            generated, stopped = self._generate(prompt)
        except RuntimeError as exc:  # llama_decode failed: the KV it holds is unknown
            self.held, self.held_cuts = [], set()
            return InfrastructureError(f"llama.cpp failed: {exc}")
        return emission(self.tokenizer, prompt, generated, stopped)

    def _generate(self, prompt: list[int]) -> tuple[list[int], bool]:
        """Greedy tokens after `prompt` (the stop token included) and whether one stopped it."""
        llm, s = self.llm, self.stats
        cuts = chunk_cuts(prompt, self.chunk, self.cut_ids)
        shared = min(common_prefix(self.held, prompt), len(prompt) - 1)
        keep = max(c for c in cuts if c <= shared and (c == 0 or c in self.held_cuts))
        started = time.perf_counter()
        llm.n_tokens = keep  # `eval` drops the KV from here on
        for start, end in pairwise(cuts):
            if start >= keep:
                llm.eval(prompt[start:end])
        self.held, self.held_cuts = prompt, set(cuts)
        s["prefill_seconds"] += time.perf_counter() - started
        s["prompt_tokens"] += len(prompt)
        s["reused_tokens"] += keep
        started = time.perf_counter()
        generated: list[int] = []
        while True:
            generated.append(self._greedy())
            if generated[-1] in self.stop_ids or len(generated) >= self.options.max_new_tokens:
                break
            llm.eval(generated[-1:])
        s["decode_seconds"] += time.perf_counter() - started
        s["generated_tokens"] += len(generated)
        return generated, generated[-1] in self.stop_ids

    def _greedy(self) -> int:
        """The most likely next token after the last evaluated position (lowest id on a tie)."""
        logits = llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return int(np.ctypeslib.as_array(logits, shape=(self.llm.n_vocab(),)).argmax())


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def cpu_features() -> str:
    """The CPU features llama.cpp was built for and uses (its system info), e.g.
    `AVX AVX2 AVX512 F16C FMA ...`: its kernels, hence the bits, follow them."""
    info = llama_cpp.llama_print_system_info().decode()
    return " ".join(sorted(part.split("=")[0].strip().split(" : ")[-1]
                           for part in info.split("|") if part.strip().endswith("= 1")))


def make(spec: ModelSpec) -> LlamaCppBackend:
    return LlamaCppBackend(spec.name, model_options(LlamaCppOptions, spec))
