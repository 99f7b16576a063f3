"""Prefill attention formulations on CPU, one layer and the whole model (not a test).

Part 1 times one layer's attention for a prefill chunk of `--chunk` queries at the end of S keys
(random float32 tensors of SmolLM2-135M's shapes: 9 query heads, 3 KV heads, head dim 64; keys
and values are views of a longer KV buffer, as the engine's cache hands them over), for several
formulations, and the max abs difference of each from the engine's output. The query comes in
two layouts: `wm`, the strides a weight-major linear layer (`hf.engine.weight_major`) leaves on
it (last-dim stride = chunk length), and `contig`. The SDPA backend each call picks is printed
(0 = math, 1 = fused flash kernel).

Part 2 (when the converted SmolLM2 folder exists) times the real model's forward of one
256-token chunk at several offsets (random KV before it) with weight-major linear layers
returning their output transposed (old) and row-major (now, which gives the query stride 1),
and profiles the share of one chunk spent in attention.

    python bench/attention_paths.py [--sizes 1000 2500 5000] [--repeats 5] [--no-model]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from torch.nn.functional import scaled_dot_product_attention as sdpa  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HEADS, KV_HEADS, DIM = 9, 3, 64
GROUP = HEADS // KV_HEADS
FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def best_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return 1e3 * best


def merge(o1: torch.Tensor, l1: torch.Tensor, o2: torch.Tensor, l2: torch.Tensor) -> torch.Tensor:
    """Two softmax-attention partial results over disjoint key sets, merged by log-sum-exp."""
    lse = torch.logaddexp(l1, l2)
    return o1 * (l1 - lse).exp().unsqueeze(-1) + o2 * (l2 - lse).exp().unsqueeze(-1)


def formulations(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int,
                 ) -> dict[str, Callable[[], torch.Tensor]]:
    length, keys = q.shape[2], k.shape[2]
    scale = DIM ** -0.5
    mask = torch.ones(length, keys, dtype=torch.bool).tril(start)[None, None]
    additive = torch.zeros(length, keys).masked_fill_(~mask[0, 0], float("-inf"))[None, None]
    block = torch.zeros(length, length).masked_fill_(
        ~torch.ones(length, length, dtype=torch.bool).tril(), float("-inf"))

    def split() -> torch.Tensor:  # (d) prefix without mask + own block causal, merged
        o1, l1 = FLASH(q, k[:, :, :start], v[:, :, :start], scale=scale)
        o2, l2 = FLASH(q, k[:, :, start:], v[:, :, start:], is_causal=True, scale=scale)
        return merge(o1, l1, o2, l2)

    def stacked() -> torch.Tensor:  # (e) a KV head's 3 query heads as one 768-row query
        stacked_mask = mask.repeat(1, 1, GROUP, 1)
        return sdpa(q.reshape(1, KV_HEADS, GROUP * length, DIM), k, v, attn_mask=stacked_mask,
                    scale=scale).view(1, HEADS, length, DIM)

    def stacked_split() -> torch.Tensor:  # (e) stacked, prefix unmasked + block masked, merged
        qs = q.reshape(1, KV_HEADS, GROUP * length, DIM)
        o1, l1 = FLASH(qs, k[:, :, :start], v[:, :, :start], scale=scale)
        o2, l2 = FLASH(qs, k[:, :, start:], v[:, :, start:],
                       attn_mask=block.repeat(GROUP, 1)[None, None], scale=scale)
        return merge(o1, l1, o2, l2).view(1, HEADS, length, DIM)

    def grouped_matmul() -> torch.Tensor:  # (e) plain matmuls per KV head, additive mask
        g = q.reshape(KV_HEADS, GROUP * length, DIM)
        scores = torch.matmul(g, k[0].transpose(1, 2)).view(KV_HEADS, GROUP, length, keys)
        weights = scores.mul_(scale).add_(additive[0, 0]).softmax(-1)
        return torch.matmul(weights.view(KV_HEADS, GROUP * length, keys), v[0]).view(
            1, HEADS, length, DIM)

    return {
        "(a) bool mask + enable_gqa": lambda: sdpa(q, k, v, attn_mask=mask, scale=scale,
                                                   enable_gqa=True),
        "(b) repeat_interleave KV, bool mask": lambda: sdpa(
            q, k.repeat_interleave(GROUP, 1), v.repeat_interleave(GROUP, 1), attn_mask=mask,
            scale=scale),
        "(c) float mask + enable_gqa": lambda: sdpa(q, k, v, attn_mask=additive, scale=scale,
                                                    enable_gqa=True),
        "(d) split prefix/causal, LSE merge": split,
        "(e) stacked heads, bool mask": stacked,
        "(e) stacked heads, split + merge": stacked_split,
        "(e) grouped matmuls + softmax": grouped_matmul,
    }


def layer_table(sizes: list[int], chunk: int, repeats: int) -> None:
    torch.manual_seed(0)
    print(f"one layer, {chunk} queries at the end of S keys, float32, 1 thread, best of "
          f"{repeats} (ms); diff = max |x - (a) contig|; backend 0 = math, 1 = flash")
    print(f"| formulation | query | {' | '.join(f'S={s}' for s in sizes)} | max diff | backend |")
    print(f"|---|---|{'---|' * len(sizes)}---|---|")
    rows: dict[tuple[str, str], list[str]] = {}
    diffs: dict[tuple[str, str], float] = {}
    backends: dict[tuple[str, str], str] = {}
    for keys in sizes:
        start = keys - chunk
        # the weight-major q projection's output is (W @ xᵀ)ᵀ: [chunk, 576] with strides (1, chunk)
        wm = torch.randn(HEADS * DIM, chunk).t().view(1, chunk, HEADS, DIM).transpose(1, 2)
        layouts = {"wm": wm, "contig": wm.contiguous()}
        k = torch.randn(1, KV_HEADS, keys + 300, DIM)[:, :, :keys]
        v = torch.randn(1, KV_HEADS, keys + 300, DIM)[:, :, :keys]
        mask = torch.ones(chunk, keys, dtype=torch.bool).tril(start)[None, None]
        reference = sdpa(layouts["contig"], k, v, attn_mask=mask, scale=DIM ** -0.5,
                         enable_gqa=True)
        for layout, q in layouts.items():
            for name, fn in formulations(q, k, v, start).items():
                if layout == "wm" and not name.startswith("(a)"):
                    continue
                key = (name, layout)
                rows.setdefault(key, []).append(f"{best_ms(fn, repeats):.1f}")
                diffs[key] = max(diffs.get(key, 0.0), float((fn() - reference).abs().max()))
                if name.startswith("(a)"):
                    backends[key] = str(torch._fused_sdp_choice(
                        q, k, v, mask, 0.0, False, scale=DIM ** -0.5, enable_gqa=True))
    for (name, layout), cells in rows.items():
        print(f"| {name} | {layout} | {' | '.join(cells)} | {diffs[(name, layout)]:.1e} | "
              f"{backends.get((name, layout), '')} |")


def transposed_forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """`_WeightMajorLinear.forward` before 2026-12-01 (later): `(W @ xᵀ)ᵀ` left transposed."""
    rows = x.reshape(-1, x.shape[-1])
    out = torch.matmul(self.weight, rows.t()).t()
    if self.bias is not None:
        out = out + self.bias
    return out.reshape(*x.shape[:-1], out.shape[-1])


def model_part(folder: Path, offsets: list[int], chunk: int, repeats: int) -> None:
    from torch.profiler import profile
    from transformers import AutoModelForCausalLM

    from toolcalib.backends.hf import engine as hf_engine

    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, local_files_only=True,
        attn_implementation=hf_engine.ATTENTION).eval()
    hf_engine.weight_major(model)
    engine = hf_engine.Engine(model, set(), chunk, 0, 1, set())
    torch.manual_seed(0)

    def chunk_at(start: int) -> hf_engine.Sequence:
        seq = engine.sequence(torch.randint(0, model.config.vocab_size, (start + chunk,)),
                              start + chunk)
        for buffer in seq.keys + seq.values:
            buffer.normal_()
        seq.cuts, seq.length = sorted({0, start, start + chunk}), start
        return seq

    def run(seq: hf_engine.Sequence, start: int) -> None:
        seq.length = start
        engine.extend(seq)

    linear = hf_engine._WeightMajorLinear
    variants = {"old": transposed_forward, "new": linear.forward}
    print(f"\nSmolLM2-135M float32 (weight-major), one {chunk}-token chunk after `offset` "
          f"positions of KV, 1 thread, best of {repeats}")
    print("| offset | old s | old tok/s | new s | new tok/s | speedup |")
    print("|---|---|---|---|---|---|")
    for start in offsets:
        seq = chunk_at(start)
        seconds = {}
        for name, fn in variants.items():
            linear.forward = fn
            seconds[name] = best_ms(lambda seq=seq, start=start: run(seq, start), repeats) / 1e3
        print(f"| {start} | {seconds['old']:.2f} | {chunk / seconds['old']:.0f} | "
              f"{seconds['new']:.2f} | {chunk / seconds['new']:.0f} | "
              f"{seconds['old'] / seconds['new']:.2f}x |", flush=True)
    start = offsets[len(offsets) // 2]
    seq = chunk_at(start)
    for name, fn in variants.items():
        linear.forward = fn
        run(seq, start)
        with profile() as prof:
            run(seq, start)
        events = {e.key: e for e in prof.key_averages()}
        total = sum(e.self_cpu_time_total for e in events.values()) / 1e6
        attention = events["aten::scaled_dot_product_attention"].cpu_time_total / 1e6
        kernel = ("flash" if "aten::_scaled_dot_product_flash_attention_for_cpu" in events
                  else "math")
        print(f"profile, offset {start}, {name}: {total:.2f} s, attention ({kernel}) "
              f"{attention:.2f} s = {100 * attention / total:.0f}%, "
              f"the rest {total - attention:.2f} s")
    linear.forward = variants["new"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2500, 5000])
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--offsets", type=int, nargs="+", default=[0, 1000, 2500, 4750])
    parser.add_argument("--model-dir", type=Path,
                        default=ROOT / ".toolcalib" / "models" / "smollm2-135m")
    parser.add_argument("--no-model", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with torch.inference_mode():
        layer_table(args.sizes, args.chunk, args.repeats)
    if args.no_model or not (args.model_dir / "config.json").is_file():
        return
    model_part(args.model_dir, args.offsets, args.chunk, max(2, args.repeats // 2))


if __name__ == "__main__":
    main()
