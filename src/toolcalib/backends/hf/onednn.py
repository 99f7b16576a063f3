"""Float32 linear layers on oneDNN's inner product, for `kernels: portable`.

Under `portable` MKL runs in its `COMPATIBLE` mode (see `hf.kernels`): one SSE2 code path for
every vendor, about half the speed of its AVX2 path on the linear layers, which are most of a
forward's work. oneDNN's float32 inner product uses its own JIT GEMM (never MKL: its bits do not
move with `MKL_CBWR`), and with `ONEDNN_MAX_CPU_ISA=AVX2` the same AVX2 kernel, blocking and
summation order on every x86-64 CPU, Intel or AMD: checked against QEMU's emulated Intel and AMD
AVX2 CPUs (`tests/test_hf_kernels.py`), 2-2.5x MKL `COMPATIBLE`'s GEMM from 8 rows up on an
AVX2 machine (bench/README.md). At `GEMV_ROWS` rows or fewer (decode steps) MKL's weight-major
product (`hf.engine.weight_major`) is faster, 1.5x at 4 rows on Qwen2.5-0.5B's output layer, and
portable too, so those go to MKL. Which library runs depends on the row count alone, and a row's
output on that row and the row count, as the engine needs (`hf.engine`: decode forwards have a
fixed row count, prefill chunks fixed shapes).
"""

from __future__ import annotations

import torch

from toolcalib.backends.hf.engine import weight_major_product

GEMV_ROWS = 4
"""Most rows computed by MKL's weight-major product rather than oneDNN."""


class OneDnnLinear(torch.nn.Module):
    """`nn.Linear` in float32: oneDNN above `GEMV_ROWS` rows (weights also kept in its layout),
    MKL's weight-major product at or below."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight.detach().to(torch.float32).contiguous()
        self.packed = self.weight.to_mkldnn()
        bias = linear.bias
        self.bias = None if bias is None else bias.detach().to(torch.float32)
        self.packed_bias = None if self.bias is None else self.bias.to_mkldnn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).to(torch.float32).contiguous()
        if rows.shape[0] <= GEMV_ROWS:
            out = weight_major_product(rows, self.weight, self.bias)
        else:
            out = torch._C._nn.mkldnn_linear(rows.to_mkldnn(), self.packed,
                                             self.packed_bias).to_dense()
        return out.to(x.dtype).reshape(*x.shape[:-1], self.out_features)


def onednn_linear(model: torch.nn.Module) -> None:
    """Replace every linear layer of `model` (the output layer too) by a `OneDnnLinear`."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, OneDnnLinear(child))
