"""Model FLOPs a sample through the contract, and MFU against the table of GPU peaks."""
from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
import torch

from harness.config import compose
from harness.run import flops
from harness.run.build import build_run, context_for


def test_ncf_counts_three_times_its_forward_matmuls():
    cfg = compose(["model=ncf", "mode=throughput", "seed=1", "device=cpu"])
    run = build_run(cfg, context_for(cfg))
    linears = [m for m in run.bench.model.modules() if isinstance(m, torch.nn.Linear)]
    forward = sum(2 * m.in_features * m.out_features for m in linears)  # a sample's matmuls; embeddings look up
    per_sample, why = flops.flops_per_sample(run, run.synthetic_batch())
    assert why is None and per_sample == 3 * forward == 3 * 2 * (64 * 32 + 32 * 16 + 32 * 1)


class _Rnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True)


def _run_of(loss) -> SimpleNamespace:
    return SimpleNamespace(bench=SimpleNamespace(loss=loss), trained=None,
                           precision=SimpleNamespace(autocast=contextlib.nullcontext))


@pytest.mark.parametrize("packed", [False, True])
def test_an_lstm_counts_its_gate_matmuls_fused_or_packed(packed):
    """oneDNN's fused layer (no formula in torch) and the packed path's own matmuls count the same."""
    rnn, x = _Rnn(), torch.randn(5, 3, 8)  # (time, batch, features)
    data = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 5, 5])) if packed else x
    run = _run_of(lambda _model, _batch: (rnn.lstm(data)[0], 3))
    steps = 5 * 3
    layer0 = 2 * steps * 4 * 16 * (8 + 16)  # both directions, each its own input and hidden matmuls
    layer1 = 2 * steps * 4 * 16 * (32 + 16)
    assert flops.forward_flops(run, None) == (2 * (layer0 + layer1), 0, 3)


class _Adapted(torch.nn.Module):
    """A frozen stem, then a trained layer, then a frozen layer: LoRA's and a frozen-body detector's shape."""

    def __init__(self) -> None:
        super().__init__()
        self.stem, self.trained, self.head = (torch.nn.Linear(8, 8) for _ in range(3))
        self.stem.requires_grad_(False)
        self.head.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.trained(self.stem(x)))


def test_a_frozen_weight_counts_no_weight_gradient_and_no_backward_before_the_first_trained_one():
    """MFU of a LoRA or frozen-body run is not inflated by gradients that are never computed: the stem
    runs no backward (x1), the trained layer both gradients (x3), the frozen head its input's (x2)."""
    model = _Adapted()
    run = SimpleNamespace(bench=SimpleNamespace(loss=lambda m, x: (m(x).sum(), 4)), trained=model,
                          precision=SimpleNamespace(autocast=contextlib.nullcontext))
    layer = 2 * 4 * 8 * 8  # a batch of 4 through one 8x8 matmul
    assert flops.forward_flops(run, torch.randn(4, 8)) == (3 * layer, 2 * layer + layer, 4)
    assert flops.flops_per_sample(run, torch.randn(4, 8)) == ((1 + 3 + 2) * layer / 4, None)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())  # the count leaves none


def test_mfu_is_throughput_times_flops_over_the_peak_of_every_rank():
    fields = flops.utilisation(1e9, 989_400.0, "NVIDIA H200", "amp", 2)
    assert fields["achieved_tflops"] == pytest.approx(989.4) and fields["mfu"] == pytest.approx(0.5)
    assert fields["peak_tflops"] == 989.4 and fields["peak_source"].startswith("H200 SXM fp16: NVIDIA H200")
    assert fields["mfu_note"] is None
    cpu = flops.utilisation(1e9, 1000.0, None, "fp32", 1)
    assert cpu["mfu"] is None and cpu["achieved_tflops"] == pytest.approx(1.0)
    assert cpu["mfu_note"] == "no GPU: MFU is a GPU's figure"
    assert flops.describe(1e9, 989.4, 0.5, None) == "1 GFLOP a sample, 989 TFLOP/s, MFU 50.0%"
    assert flops.describe(None, None, None, "FLOPs not counted: RuntimeError") == \
        "model FLOPs n/a (FLOPs not counted: RuntimeError)"


def test_a_count_that_fails_leaves_the_run_alone():
    def broken(_model, _batch):
        raise RuntimeError("shape mismatch")

    assert flops.flops_per_sample(_run_of(broken), None) == (None, "FLOPs not counted: RuntimeError")


def test_a_submodule_given_a_view_of_a_parameter_is_counted():
    """Under no_grad such a view requires grad yet has no gradient function (Tacotron 2's location kernel):
    the count takes totals alone, without torch's per-module tracker that fails on it."""
    inner, outer = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    run = _run_of(lambda _model, _batch: (inner(outer.weight.view(4, 4)), 4))
    assert flops.forward_flops(run, None) == (2 * 4 * 4 * 4, 0, 4)


@pytest.mark.parametrize("op", ["_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                                "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"])
def test_grouped_query_attention_counts_as_its_repeated_heads(op):
    """The CUDA kernels take Llama's 8 key/value heads beside 32 query heads: counted, as if repeated."""
    formula = flops.RNN_FORMULAS[getattr(torch.ops.aten, op)]
    q, kv = (2, 32, 128, 64), (2, 8, 128, 64)
    assert formula(q, kv, kv) == 2 * (2 * 2 * 32 * 128 * 128 * 64)  # q @ k^T and p @ v, a batch of 2
    assert formula(q, kv, kv) == formula(q, q, q)
