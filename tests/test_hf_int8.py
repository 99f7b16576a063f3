"""Integer linear layers (`linear: int8`): rows independent bit for bit, exact integer
products on any kernel family, close to the float layer."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from toolcalib.backends.hf.int8 import WEIGHT_LEVELS, Int8Linear, int8_linear


def _layer(bias: bool = True) -> Int8Linear:
    torch.manual_seed(0)
    return Int8Linear(torch.nn.Linear(96, 40, bias=bias))


def test_a_row_gets_the_same_bits_at_any_row_count() -> None:
    layer = _layer()
    rows = torch.randn(9, 96) * torch.linspace(0.1, 10, 9)[:, None]
    together = layer(rows)
    for count in (1, 3, 4):
        alone = torch.cat([layer(rows[i:i + count]) for i in range(0, 9, count)])
        assert torch.equal(together, alone)


def test_the_integer_products_are_exact() -> None:
    layer = _layer(bias=False)
    assert int(layer.qweight.abs().max()) <= WEIGHT_LEVELS
    q = torch.randint(-127, 128, (5, 96), dtype=torch.int8)
    exact = (q.double() @ layer.qweight.t().double()).long()
    assert torch.equal(torch._int_mm(q, layer.qweight.t()).long(), exact)


def test_close_to_the_float_layer() -> None:
    torch.manual_seed(1)
    linear = torch.nn.Linear(96, 40)
    x = torch.randn(4, 7, 96)
    out = Int8Linear(linear)(x)
    assert out.shape == (4, 7, 40)
    error = (out - linear(x)).abs().max() / linear(x).abs().max()
    assert float(error) < 0.05


def test_every_linear_layer_of_a_model_is_replaced() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Sequential(torch.nn.Linear(8, 8)))
    int8_linear(model)
    assert [type(m).__name__ for m in model.modules()].count("Int8Linear") == 2
    assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())


@pytest.mark.parametrize(("bf16", "amx", "expected"), [(True, False, "bfloat16"),
                                                       (False, True, "bfloat16"),
                                                       (False, False, "float32")])
def test_auto_dtype_follows_the_cpu(monkeypatch: pytest.MonkeyPatch, bf16: bool, amx: bool,
                                    expected: str) -> None:
    from toolcalib.backends.hf import backend as hf
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert hf.resolve_dtype("auto") == expected
    assert hf.resolve_dtype("float32") == "float32"


def test_the_integer_products_are_exact_on_the_avx2_kernels_too() -> None:
    """oneDNN capped at AVX2 (vpmaddubsw, saturating int16 pair sums): 7-bit weights keep the
    products exact there too, so both kernel families compute the same integers."""
    check = ("import torch; torch.manual_seed(0); "
             "w = torch.randint(-63, 64, (256, 512), dtype=torch.int8); "
             "q = torch.randint(-127, 128, (5, 512), dtype=torch.int8); "
             "exact = (q.double() @ w.t().double()).long(); "
             "print(torch.equal(torch._int_mm(q, w.t()).long(), exact))")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          env={**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert done.stdout.strip() == "True", done.stderr
