"""Greedy generation for a Hugging Face causal LM: prompts prefilled on top of reused prefix
KV caches, then decoded together in batches.

Outputs do not depend on reuse or batching, by construction:
- every prompt is prefilled alone, in chunks between *cuts*: every multiple of `chunk` and every
  position holding a cut token (the chat template's message start). Whether a position is a
  cut depends only on its own token, so two prompts sharing a prefix cut it alike, and the KV of
  positions before a cut both share has the same bits whether it was computed now or copied
  from the prefix store (same chunks, same shapes, same inputs). A conversation's next prompt
  thus reuses everything before its last generation prompt, and prompts that share a system
  message reuse all of it, in other processes too (`hf.shared_prefixes`);
- every decode forward has exactly `decode_rows` rows (padded with idle rows), because CPU
  matmul kernels give a row different bits for different row counts (bf16 and fp32 alike),
  but the same bits at any position for a fixed count; attention is computed per row on that
  row's own unpadded keys (no padding, no mask), so a row never sees its batch-mates;
- a draft (prompt lookup: the tokens that followed the latest earlier occurrence of the
  sequence's last `DRAFT_NGRAM` tokens) is verified in a forward of that sequence alone; the
  greedy token at each drafted position is kept up to the first disagreement, plus the one
  after it. A sequence's drafts start at `draft_tokens`, shrink to what was accepted after a
  rejection and double after a full acceptance (a rejected 16-token draft costs Qwen2.5-0.5B
  ~1.2 s, four decode steps). Whether and what to draft depends only on the sequence's own
  tokens (and a sequence's forwards only on its own state), so emissions
  stay independent of batching; they equal step-by-step greedy decoding up to float rounding
  (a k-token forward may round a near-tie differently than k one-token forwards). Models
  looping on a repeated tool call (Qwen2.5-0.5B: the same 32-token call 20 times) then cost a
  few forwards per call instead of one per token.

`weight_major` makes every linear layer compute `W @ xᵀ` instead of `x @ Wᵀ`: for the few rows
of a decode step MKL's float32 GEMM is then up to 3x faster on AVX2 (Qwen2.5-0.5B's output
layer, 4 rows: 72 vs 212 ms) and no slower for prefill chunks (see bench/README.md). Its output
is copied to row-major order: left transposed, it sent the next GEMM with it as input (the MLP's
down projection) to a 3x slower kernel and the prefill attention to SDPA's unfused path.

`NUMERICS` versions the engine's arithmetic and enters the backend's identity: a change that may
alter computed bits bumps it, so the response store never mixes answers computed differently.
"""

from __future__ import annotations

import inspect
import time
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.functional import scaled_dot_product_attention
from transformers import AttentionInterface

from toolcalib.backends.hf.prompt import chunk_cuts
from toolcalib.backends.hf.shared_prefixes import SharedPrefixes

ATTENTION = "toolcalib_rows"
NUMERICS = 4
"""1: weight-major linear layers with transposed outputs; 2: row-major outputs, so SDPA's
fused kernel runs the prefill attention; 3: drafts verified in multi-token forwards; 4: under
`kernels: portable`, float linear layers on oneDNN (`hf.onednn`), not MKL."""
DRAFT_NGRAM = 4
"""Tokens of a sequence's tail that must recur earlier in it for a draft (fewer match too often
in free text, where most drafts are then rejected)."""
KV_DTYPE = torch.float32
"""Keys, values and attention are float32 whatever the weights: more accurate, and on CPU the
bfloat16 attention kernels were several times slower here."""


def _attention(module: Any, query: torch.Tensor, key: torch.Tensor | list[torch.Tensor],
               value: torch.Tensor | list[torch.Tensor], attention_mask: torch.Tensor | None,
               scaling: float | None = None, sliding_window: int | None = None,
               **_: Any) -> tuple[torch.Tensor, None]:
    """Prefill: one row, causal mask given. Decode: `key`/`value` are per-row lists (None for
    an idle row).

    SDPA's fused CPU (flash) kernel needs the query's last dimension at stride 1, which the
    row-major outputs of `_WeightMajorLinear` give it; strided, it falls back to the unfused math
    path, which materializes every score (2x slower at 2,500 keys; see bench/README.md)."""
    if sliding_window is not None:
        raise NotImplementedError("sliding-window attention is not supported")
    query32 = query.to(KV_DTYPE)
    if isinstance(key, list):
        out = torch.cat([_one_query(query32[row], key[row][0], value[row][0], scaling)
                         if key[row] is not None else torch.zeros_like(query32[row:row + 1])
                         for row in range(len(key))])
    else:
        assert isinstance(value, torch.Tensor)  # prefill: keys and values are whole tensors
        out = scaled_dot_product_attention(query32, key, value, attn_mask=attention_mask,
                                           scale=scaling, enable_gqa=True)
    return out.to(query.dtype).transpose(1, 2).contiguous(), None


def _one_query(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float | None) -> torch.Tensor:
    """Attention of one position ([heads, 1, dim]) over one row's keys ([kv_heads, n, dim]);
    query heads are grouped by the kv head they share. Plain matmuls: for a single query
    they read the cache faster than the fused kernel."""
    heads, kv_heads, dim = query.shape[0], key.shape[0], query.shape[-1]
    grouped = query.reshape(kv_heads, heads // kv_heads, dim)
    scores = torch.matmul(grouped, key.transpose(-1, -2)) * (scaling or dim ** -0.5)
    return torch.matmul(scores.softmax(-1), value).reshape(1, heads, 1, dim)


AttentionInterface.register(ATTENTION, _attention)


def weight_major_product(rows: torch.Tensor, weight: torch.Tensor,
                         bias: torch.Tensor | None) -> torch.Tensor:
    """`rows @ weightᵀ + bias` computed as `(weight @ rowsᵀ)ᵀ`, copied to row-major order."""
    out = torch.matmul(weight, rows.t()).t().contiguous()
    return out if bias is None else out + bias


class _WeightMajorLinear(torch.nn.Linear):
    """`nn.Linear` computing `(W @ xᵀ)ᵀ`: the weight is the GEMM's long operand."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = weight_major_product(x.reshape(-1, x.shape[-1]), self.weight, self.bias)
        return out.reshape(*x.shape[:-1], out.shape[-1])


def weight_major(model: torch.nn.Module) -> None:
    """Make every plain linear layer of `model` a `_WeightMajorLinear` (same parameters)."""
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = _WeightMajorLinear


class Sequence:
    """One prompt: its tokens and cuts, per-layer KV buffers [1, kv_heads, capacity, head_dim]
    holding `length` positions, and the tokens generated so far."""

    def __init__(self, prompt: torch.Tensor, capacity: int, shape: tuple[int, int, int],
                 cuts: list[int]):
        layers, heads, dim = shape
        self.prompt = prompt
        self.cuts = cuts
        self.keys = [torch.empty(1, heads, capacity, dim, dtype=KV_DTYPE) for _ in range(layers)]
        self.values = [torch.empty(1, heads, capacity, dim, dtype=KV_DTYPE) for _ in range(layers)]
        self.length = 0
        self.generated: list[int] = []
        self.stopped = False
        self.done = False
        self.draft_size = 0

    def copy_prefix(self, source: Sequence, length: int) -> None:
        for mine, theirs in zip(self.keys + self.values, source.keys + source.values,
                                strict=True):
            mine[:, :, :length].copy_(theirs[:, :, :length])
        self.length = length


class _PrefillCache:
    """The cache protocol the model's attention calls, over one sequence's buffers."""

    def __init__(self, sequence: Sequence):
        self.sequence = sequence

    def update(self, key: torch.Tensor, value: torch.Tensor, layer: int,
               *_: Any, **__: Any) -> tuple[torch.Tensor, torch.Tensor]:
        seq, start = self.sequence, self.sequence.length
        end = start + key.shape[2]
        seq.keys[layer][:, :, start:end].copy_(key)
        seq.values[layer][:, :, start:end].copy_(value)
        return seq.keys[layer][:, :, :end], seq.values[layer][:, :, :end]


class _DecodeCache:
    """One new position per row, written into each row's own buffers; attention gets each
    row's keys/values separately (see `_attention`); idle rows (None) keep nothing."""

    def __init__(self, sequences: list[Sequence | None]):
        self.sequences = sequences

    def update(self, key: torch.Tensor, value: torch.Tensor, layer: int, *_: Any, **__: Any,
               ) -> tuple[list[torch.Tensor | None], list[torch.Tensor | None]]:
        keys: list[torch.Tensor | None] = []
        values: list[torch.Tensor | None] = []
        for row, seq in enumerate(self.sequences):
            if seq is None:
                keys.append(None)
                values.append(None)
                continue
            at = seq.length
            seq.keys[layer][:, :, at].copy_(key[row, :, 0])
            seq.values[layer][:, :, at].copy_(value[row, :, 0])
            keys.append(seq.keys[layer][:, :, :at + 1])
            values.append(seq.values[layer][:, :, :at + 1])
        return keys, values


class PrefixStore:
    """LRU of computed prompts whose KV can seed a new sequence, bounded by the total number of
    positions kept (0 disables reuse)."""

    def __init__(self, budget_tokens: int):
        self.budget = budget_tokens
        self.entries: OrderedDict[int, Sequence] = OrderedDict()
        self._next = 0

    def lookup(self, prompt: torch.Tensor, cuts: list[int]) -> tuple[Sequence | None, int]:
        """The entry whose KV covers the longest prefix of `prompt` ending at a cut of both
        (leaving at least one prompt token to compute), and that length."""
        best, best_length = None, 0
        for key, entry in self.entries.items():
            limit = min(common_prefix(entry.prompt, prompt), len(prompt) - 1)
            mine = set(entry.cuts)
            length = next((c for c in reversed(cuts[:bisect_right(cuts, limit)]) if c in mine),
                          0)
            if length > best_length:
                best, best_length = key, length
        if best is None:
            return None, 0
        self.entries.move_to_end(best)
        return self.entries[best], best_length

    def add(self, sequence: Sequence) -> None:
        """Keep `sequence` (its prompt positions), dropping entries whose prompt it extends."""
        size = len(sequence.prompt)
        if size == 0 or size > self.budget:
            return
        for key, entry in list(self.entries.items()):
            shared = common_prefix(entry.prompt, sequence.prompt)
            if shared == size:
                self.entries.move_to_end(key)
                return
            if shared == len(entry.prompt):
                del self.entries[key]
        self.entries[self._next] = sequence
        self._next += 1
        while sum(len(e.prompt) for e in self.entries.values()) > self.budget:
            self.entries.popitem(last=False)


def prompt_cuts(prompt: torch.Tensor, chunk: int, cut_ids: torch.Tensor) -> list[int]:
    """`chunk_cuts` of a tensor prompt."""
    return chunk_cuts(prompt.tolist(), chunk, set(cut_ids.tolist()))


def common_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    n = min(len(a), len(b))
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0]) if len(differ) else n


def lookup_draft(context: torch.Tensor, ngram: int, size: int) -> list[int]:
    """`size` tokens continuing `context` as it continued after the latest earlier occurrence
    of its last `ngram` tokens (none if they do not recur). A continuation that reaches the end
    of `context` goes on with the draft itself: a repeating pattern repeats."""
    if size < 1 or len(context) <= ngram:
        return []
    windows = context[:-1].unfold(0, ngram, 1)
    found = (windows == context[-ngram:]).all(-1).nonzero()
    if not len(found):
        return []
    follow = context[int(found[-1]) + ngram:].tolist()
    return (follow * (size // len(follow) + 1))[:size]


@dataclass
class Stats:
    """What the engine did, for throughput accounting."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    shared_tokens: int = 0
    prefill_seconds: float = 0.0
    decode_steps: int = 0
    generated_tokens: int = 0
    decode_seconds: float = 0.0
    draft_forwards: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    draft_seconds: float = 0.0


class Engine:
    def __init__(self, model: Any, stop_ids: set[int], chunk: int, store_tokens: int,
                 decode_rows: int, cut_ids: set[int], draft_tokens: int = 0):
        if model.config._attn_implementation != ATTENTION:
            model.set_attn_implementation(ATTENTION)
        config = model.config
        heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.model, self.stop_ids, self.chunk = model, stop_ids, chunk
        self.decode_rows, self.draft_tokens = decode_rows, draft_tokens
        self.shape = (config.num_hidden_layers, heads, dim)
        self.cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters \
            else "past_key_values"
        self.cut_ids = torch.tensor(sorted(cut_ids), dtype=torch.long)
        self.store = PrefixStore(store_tokens)
        self.shared: SharedPrefixes | None = None
        self.stats = Stats()

    @torch.inference_mode()
    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[Sequence]:
        """Greedy continuations of `prompts`: each round verifies the drafts of the sequences
        that have one, then decodes the others together, `decode_rows` at a time."""
        sequences = [self._prefill(torch.tensor(p, dtype=torch.long), max_new_tokens)
                     for p in prompts]
        active = [s for s in sequences if not s.done]
        while active:
            plain = []
            for seq in active:
                draft = lookup_draft(torch.cat([seq.prompt, torch.tensor(seq.generated)]),
                                     DRAFT_NGRAM, min(seq.draft_size,
                                                      max_new_tokens - len(seq.generated)))
                if draft:
                    self._verify(seq, draft, max_new_tokens)
                else:
                    plain.append(seq)
            for start in range(0, len(plain), self.decode_rows):
                self._decode(plain[start:start + self.decode_rows], max_new_tokens)
            active = [s for s in active if not s.done]
        return sequences

    def _decode(self, group: list[Sequence], max_new_tokens: int) -> None:
        """One new token for each sequence of `group`, in a forward of `decode_rows` rows."""
        rows: list[Sequence | None] = [*group, *[None] * (self.decode_rows - len(group))]
        started = time.perf_counter()
        logits = self.model(
            input_ids=torch.tensor([[s.generated[-1] if s else 0] for s in rows]),
            position_ids=torch.tensor([[s.length if s else 0] for s in rows]),
            attention_mask=torch.ones(len(rows), 1, 1, 1, dtype=torch.bool),
            use_cache=True, **{self.cache_arg: _DecodeCache(rows)}).logits
        self.stats.decode_seconds += time.perf_counter() - started
        self.stats.decode_steps += 1
        for row, seq in enumerate(group):
            seq.length += 1
            self._append(seq, int(logits[row, -1].argmax()), max_new_tokens)

    def _verify(self, seq: Sequence, draft: list[int], max_new_tokens: int) -> None:
        """Run `seq`'s last token and `draft` in one forward; keep the draft up to the first
        token greedy decoding disagrees with, then greedy's own token there."""
        ids = torch.tensor([seq.generated[-1], *draft])
        start = seq.length
        started = time.perf_counter()
        logits = self._forward(seq, ids, start, len(ids))
        self.stats.draft_seconds += time.perf_counter() - started
        best = logits[0].argmax(-1).tolist()
        accepted = 0
        while accepted < len(draft) and best[accepted] == draft[accepted]:
            accepted += 1
        self.stats.draft_forwards += 1
        self.stats.drafted_tokens += len(draft)
        self.stats.accepted_tokens += accepted
        seq.draft_size = min(2 * accepted, self.draft_tokens) if accepted == len(draft) \
            else max(accepted, 1)
        for token in best[:accepted + 1]:
            seq.length += 1
            if self._append(seq, token, max_new_tokens):
                return

    def _append(self, seq: Sequence, token: int, max_new_tokens: int) -> bool:
        """Add `token` to `seq`; whether `seq` is now finished."""
        self.stats.generated_tokens += 1
        seq.generated.append(token)
        seq.stopped = token in self.stop_ids
        seq.done = seq.stopped or len(seq.generated) >= max_new_tokens
        return seq.done

    def _prefill(self, prompt: torch.Tensor, max_new_tokens: int) -> Sequence:
        seq = self.sequence(prompt, len(prompt) + max_new_tokens)
        seq.draft_size = self.draft_tokens
        source, reused = self.store.lookup(prompt, seq.cuts)
        if source is not None:
            seq.copy_prefix(source, reused)
        if self.shared is not None and (shared := self.shared.load(seq)):
            reused = shared
            self.stats.shared_tokens += shared
        started = time.perf_counter()
        logits = self.extend(seq)
        if self.shared is not None:
            self.shared.save(seq)
        self.stats.prefill_seconds += time.perf_counter() - started
        self.stats.prompt_tokens += len(prompt)
        self.stats.reused_tokens += reused
        self.store.add(seq)
        self._append(seq, int(logits[0, -1].argmax()), max_new_tokens)
        return seq

    def sequence(self, prompt: torch.Tensor, capacity: int) -> Sequence:
        return Sequence(prompt, capacity, self.shape,
                        prompt_cuts(prompt, self.chunk, self.cut_ids))

    @torch.inference_mode()
    def extend(self, seq: Sequence) -> torch.Tensor:
        """Compute the prompt positions from `seq.length` on (the KV before it in place), one
        forward per chunk between the cuts from there; the last position's logits."""
        ends = seq.cuts[bisect_right(seq.cuts, seq.length):]
        for start, end in zip([seq.length, *ends[:-1]], ends, strict=True):
            logits = self._forward(seq, seq.prompt[start:end], start, 1)
            seq.length = end
        return logits

    def _forward(self, seq: Sequence, ids: torch.Tensor, start: int, keep: int) -> torch.Tensor:
        """Positions `start`.. of `seq` holding `ids`, causally over its KV before them (which
        they extend); the logits of the last `keep` positions."""
        mask = torch.ones(len(ids), start + len(ids), dtype=torch.bool).tril(start)
        logits: torch.Tensor = self.model(input_ids=ids[None], position_ids=torch.arange(
            start, start + len(ids))[None], attention_mask=mask[None, None], use_cache=True,
            logits_to_keep=keep, **{self.cache_arg: _PrefillCache(seq)}).logits
        return logits
