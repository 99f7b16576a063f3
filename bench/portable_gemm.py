"""Float32 linear layers under `kernels: portable`: oneDNN's GEMM (`hf.onednn`) vs MKL's
`COMPATIBLE` path (plain `x @ Wᵀ` and the weight-major `W @ xᵀ`), side by side in one process.

    python bench/portable_gemm.py [--rows 1 4 8 17 64 256] [--repeat 10]

Qwen2.5-0.5B's layer shapes (MLP up and down, attention output, the output layer), one thread,
ms per call and the ratio of the faster MKL form over oneDNN (>1: oneDNN is faster). The
portable variables are set before torch loads, as the backend sets them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from toolcalib.backends.hf.kernels import PORTABLE  # noqa: E402

os.environ.update(PORTABLE)

import torch  # noqa: E402

SHAPES = {"mlp up": (4864, 896), "mlp down": (896, 4864), "attention out": (896, 896),
          "output layer": (151936, 896)}


def mkl_plain(x: torch.Tensor, weight: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.linear(x, weight)


def mkl_weight_major(x: torch.Tensor, weight: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
    return torch.matmul(weight, x.t()).t().contiguous()


def onednn(x: torch.Tensor, _: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    return torch._C._nn.mkldnn_linear(x.to_mkldnn(), packed, None).to_dense()


def per_call(fn, x: torch.Tensor, weight: torch.Tensor, packed: torch.Tensor,
             repeat: int) -> float:
    fn(x, weight, packed)
    start = time.perf_counter()
    for _ in range(repeat):
        fn(x, weight, packed)
    return (time.perf_counter() - start) / repeat * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4, 8, 17, 64, 256])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}, "
          f"one thread; ms per call")
    print(f"{'layer':14} {'rows':>5} {'mkl x@Wt':>9} {'mkl W@xt':>9} {'onednn':>8} {'ratio':>6}")
    for name, (out, inp) in SHAPES.items():
        weight = torch.randn(out, inp)
        packed = weight.to_mkldnn()
        for rows in args.rows:
            x = torch.randn(rows, inp)
            repeat = max(1, args.repeat // (10 if out > 100_000 and rows > 16 else 1))
            plain, major, ours = (per_call(fn, x, weight, packed, repeat)
                                  for fn in (mkl_plain, mkl_weight_major, onednn))
            print(f"{name:14} {rows:5} {plain:9.2f} {major:9.2f} {ours:8.2f} "
                  f"{min(plain, major) / ours:5.2f}x")


if __name__ == "__main__":
    main()
