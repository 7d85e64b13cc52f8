"""master_weights=true: the model computes in bf16/fp16 while the optimizer updates fp32 copies."""
from __future__ import annotations

import pytest
import torch

from harness.config import ConfigError, compose
from harness.run.master_weights import MasterWeights
from harness.run.precision import policy


def _model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.LSTM(8, 8))
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


def test_the_model_holds_bf16_weights_and_the_optimizer_fp32_copies_of_the_same_values():
    model, opt = _model_and_optimizer()
    before = [p.detach().clone() for p in model.parameters()]
    mw = MasterWeights(model, opt, torch.bfloat16)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    masters = [p for g in opt.param_groups for p in g["params"]]
    assert all(m.dtype == torch.float32 for m in masters)
    assert all(torch.equal(m, b) for m, b in zip(masters, before))  # exact, not rounded
    assert mw.model_params == list(model.parameters())  # the same Parameter objects, converted in place


def test_a_step_updates_the_fp32_copies_and_rounds_them_into_the_model():
    model, opt = _model_and_optimizer()
    mw = MasterWeights(model, opt, torch.bfloat16)
    out, _ = model[1](model[0](torch.tensor([[1, 2, 3]])))
    out.float().pow(2).sum().backward()
    mw.grads_to_master()
    masters = [p for g in opt.param_groups for p in g["params"]]
    assert all(m.grad is not None and m.grad.dtype == torch.float32 for m in masters)
    start = [m.detach().clone() for m in masters]
    opt.step()
    mw.master_to_model()
    moved = [not torch.equal(m, s) for m, s in zip(masters, start)]
    assert any(moved)
    for p, m in zip(model.parameters(), masters):
        assert torch.equal(p, m.to(torch.bfloat16))


def test_updates_smaller_than_bf16_resolution_accumulate_in_the_fp32_copy():
    """The point of master weights: 1000 steps of 1e-4 move a weight of 1.0 by 0.1; bf16 alone,
    whose spacing at 1.0 is 2^-7, would round every one of them away."""
    w = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.ones_(w.weight)
    opt = torch.optim.SGD(w.parameters(), lr=1e-4)
    mw = MasterWeights(w, opt, torch.bfloat16)
    for _ in range(1000):
        w.weight.grad = torch.ones_like(w.weight)
        mw.grads_to_master()
        opt.step()
        mw.master_to_model()
    assert w.weight.item() == pytest.approx(0.9, abs=2**-7)


def test_master_weights_need_a_low_precision_autocast():
    with pytest.raises(ConfigError, match="master_weights=true keeps fp16 or bf16 weights: use it with precision=amp"):
        compose(["master_weights=true", "precision=fp32"])
    with pytest.raises(ConfigError, match="on device=cpu add precision=bf16"):
        compose(["master_weights=true", "device=cpu"])  # left to the device, a CPU's precision is fp32
    model, opt = _model_and_optimizer()
    with pytest.raises(ConfigError, match="needs precision=amp or precision=bf16"):
        policy("fp32", torch.device("cpu")).keep_master_weights(model, opt)
