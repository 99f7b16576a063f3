"""KV of long system messages (a BFCL prompt's tool docs) kept in files, so that every process
running the same model reuses it: the workflow runs one generate job per (variant, category),
and the categories of a BFCL task share one tool-doc system message (Qwen2.5-0.5B: ~3,000
tokens, two minutes of prefill on one AVX2 core).

A file holds the KV of a prompt's *span*, its positions before the second message's start (a
cut, see `hf.engine`: its bits do not depend on what follows), and is named by a hash of the
model's identity (everything that decides those bits) and the span's tokens. Files appear by
atomic rename, so a reader sees a whole file or none; an unreadable one is reported and
recomputed over.
"""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path
from typing import Protocol

import torch

from toolcalib.jsonio import atomic_write_bytes


class KvSequence(Protocol):
    """What a file is filled into and written from (`hf.engine.Sequence`): the prompt, the
    per-layer KV buffers [1, kv_heads, capacity, head_dim] and the positions they hold."""

    prompt: torch.Tensor
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    length: int


class SharedPrefixes:
    def __init__(self, folder: Path, identity: str, cut_ids: torch.Tensor, min_tokens: int):
        self.folder, self.identity = folder, identity
        self.cut_ids, self.min_tokens = cut_ids, min_tokens

    def span(self, prompt: torch.Tensor) -> int:
        """Positions before the prompt's second message (0: none, or shorter than
        `min_tokens`)."""
        starts = torch.isin(prompt[1:], self.cut_ids).nonzero()
        span = int(starts[0]) + 1 if len(starts) else 0
        return span if span >= self.min_tokens else 0

    def path(self, tokens: torch.Tensor) -> Path:
        digest = hashlib.sha256(self.identity.encode())
        digest.update(tokens.to(torch.int64).numpy().tobytes())
        return self.folder / f"{digest.hexdigest()}.pt"

    def load(self, seq: KvSequence) -> int:
        """Fill `seq`'s span from its file if that reaches beyond `seq.length`; the positions
        now filled (0 if none)."""
        span = self.span(seq.prompt)
        path = self.path(seq.prompt[:span])
        if span <= seq.length or not path.is_file():
            return 0
        try:
            saved = torch.load(path, weights_only=True)
            keys, values = saved["keys"], saved["values"]
            expected = (len(seq.keys), *seq.keys[0].shape[1:2], span, seq.keys[0].shape[3])
            if keys.shape != expected or values.shape != expected:
                raise ValueError(f"shape {tuple(keys.shape)}, expected {expected}")
        except Exception as exc:  # noqa: BLE001 - torch.load of a torn file raises many kinds
            print(f"[toolcalib] shared prefix {path} unreadable ({exc}); recomputing it",
                  file=sys.stderr)
            path.unlink(missing_ok=True)
            return 0
        for layer in range(len(seq.keys)):
            seq.keys[layer][0, :, :span].copy_(keys[layer])
            seq.values[layer][0, :, :span].copy_(values[layer])
        seq.length = span
        return span

    def save(self, seq: KvSequence) -> None:
        """Write `seq`'s span (computed) unless its file exists."""
        span = self.span(seq.prompt)
        path = self.path(seq.prompt[:span])
        if not span or span > seq.length or path.is_file():
            return
        data = io.BytesIO()
        torch.save({"keys": torch.stack([k[0, :, :span] for k in seq.keys]),
                    "values": torch.stack([v[0, :, :span] for v in seq.values])}, data)
        # not synced: a file torn by an OS crash is unreadable, hence recomputed
        atomic_write_bytes(path, data.getvalue(), durable=False)
