"""`hf.onednn`: float32 linear layers on oneDNN (above `GEMV_ROWS` rows) or MKL's weight-major
product (at or below), as `kernels: portable` computes them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from toolcalib.backends.hf.onednn import GEMV_ROWS, OneDnnLinear, onednn_linear  # noqa: E402


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [1, GEMV_ROWS, GEMV_ROWS + 1, 37])
def test_it_computes_the_linear_layer(rows: int, bias: bool) -> None:
    torch.manual_seed(rows)
    linear = torch.nn.Linear(48, 80, bias=bias)
    layer = OneDnnLinear(linear)
    x = torch.randn(rows, 1, 48)
    with torch.inference_mode():
        out = layer(x)
        assert out.shape == (rows, 1, 80) and out.dtype == torch.float32
        assert out.is_contiguous()  # a transposed output slows the next GEMM and SDPA
        torch.testing.assert_close(out, linear(x), rtol=1e-5, atol=1e-5)


def test_a_bfloat16_input_comes_back_in_its_dtype() -> None:
    layer = OneDnnLinear(torch.nn.Linear(16, 8))
    with torch.inference_mode():
        assert layer(torch.randn(2, 6, 16, dtype=torch.bfloat16)).dtype == torch.bfloat16


@pytest.mark.parametrize("rows", [GEMV_ROWS, 8, 64])
def test_a_rows_output_does_not_depend_on_its_position(rows: int) -> None:
    """Both libraries give a row the same bits at any position of a `rows`-row input, what the
    engine's fixed-width decode forwards and draft verification rely on."""
    torch.manual_seed(rows)
    layer = OneDnnLinear(torch.nn.Linear(96, 200))
    row = torch.randn(96)
    outs = []
    with torch.inference_mode():
        for position in range(rows):
            x = torch.randn(rows, 96)
            x[position] = row
            outs.append(layer(x)[position])
    assert all(torch.equal(out, outs[0]) for out in outs)


def test_every_linear_layer_is_replaced() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(),
                                torch.nn.Sequential(torch.nn.Linear(8, 4, bias=False)))
    x = torch.randn(7, 8)
    with torch.inference_mode():
        expected = model(x)
        onednn_linear(model)
        assert [type(m).__name__ for m in model.modules()
                if type(m).__name__.endswith("Linear")] == ["OneDnnLinear", "OneDnnLinear"]
        torch.testing.assert_close(model(x), expected, rtol=1e-5, atol=1e-5)
