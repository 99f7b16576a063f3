"""Integer linear layers for the transformers engine (`linear: int8`).

Every linear layer becomes `Int8Linear`: weights quantized once per output channel to 7 bits
(symmetric, levels -63..63), activations per row to 8 bits (-127..127) at every call, their
product computed by torch's integer GEMM (`torch._int_mm`, oneDNN) into int32 and rescaled in
float32. Integer products and sums are exact, so a row's output depends on that row alone, at
any row count and on any kernel: the 7-bit weights keep AVX2's `vpmaddubsw` (which adds two
u8 x s8 products into a saturating int16) from saturating, so AVX2 and AVX-512 (VNNI) machines
compute the same integers (checked against an exact float64 product in tests). The rest of the
model (embeddings, norms, attention, KV) stays in the compute dtype, and its last bits follow the
kernels: quantizing an activation turns such an ulp into a whole level, so emissions differ
between kernel families far more often than float32's do. `kernels: portable` (see
`hf.kernels`) gives every AVX2 machine the same bits.

Measured on one thread (bench/README.md): 2x float32's GEMM on AVX2, 5x on AVX-512 VNNI; the
weights take a quarter of float32's memory. The recipe differs from float32 weights (emissions
differ), so `linear` enters the backend's identity.
"""

from __future__ import annotations

import torch

WEIGHT_LEVELS = 63
"""Largest weight magnitude after quantization: 7 bits, so no int16 pair sum saturates."""
ACTIVATION_LEVELS = 127
TINY = torch.finfo(torch.float32).tiny


class Int8Linear(torch.nn.Module):
    """`nn.Linear` with per-channel int8 weights and per-row int8 activations."""

    # The buffers `__init__` registers (torch's `Module.__getattr__` finds them).
    qweight: torch.Tensor
    scale: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().to(torch.float32)
        scale = weight.abs().amax(1).clamp_min(TINY) / WEIGHT_LEVELS
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("qweight", quantize(weight, scale[:, None], WEIGHT_LEVELS))
        self.register_buffer("scale", scale)
        bias = linear.bias
        self.register_buffer("bias", None if bias is None else bias.detach().to(torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).to(torch.float32)
        row_scale = rows.abs().amax(1, keepdim=True).clamp_min(TINY) / ACTIVATION_LEVELS
        products = torch._int_mm(quantize(rows, row_scale, ACTIVATION_LEVELS), self.qweight.t())
        out = products.to(torch.float32) * row_scale * self.scale
        if self.bias is not None:
            out = out + self.bias
        return out.to(x.dtype).reshape(*x.shape[:-1], self.out_features)


def quantize(values: torch.Tensor, scale: torch.Tensor, levels: int) -> torch.Tensor:
    return torch.round(values / scale).clamp_(-levels, levels).to(torch.int8)


def int8_linear(model: torch.nn.Module) -> None:
    """Replace every linear layer of `model` (the output layer too) by an `Int8Linear`, freeing
    the float weights that nothing else holds."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, Int8Linear(child))
