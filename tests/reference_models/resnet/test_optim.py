"""ResNet's SGD under amp: a first step that the GradScaler skips leaves the weights and the momentum as
they were, and the next step trains on finite numbers (PyTorch's fused SGD would otherwise keep the
uninitialised memory it made its buffers from)."""
from __future__ import annotations

import torch

from harness.run.master_weights import MasterWeights
from reference_models.vision.optim import make_optimizer


def _sgd(params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    return make_optimizer("sgd", [{"params": params, "weight_decay": 1e-4}], lr=0.1, momentum=0.9, eta=0.001,
                          epsilon=0.0, fused=True)


def test_a_skipped_first_step_keeps_weights_and_momentum_finite_and_the_next_step_trains():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(64, 32)) for _ in range(3)]
    before = [p.detach().clone() for p in params]
    opt = _sgd(params)
    for p in params:
        p.grad = torch.full_like(p, float("inf"))  # the step that overflowed in fp16
    opt.grad_scale, opt.found_inf = None, torch.ones(())  # what GradScaler.step hands a fused optimizer
    opt.step()
    assert all(torch.equal(p, b) for p, b in zip(params, before))  # skipped
    assert all(torch.equal(opt.state[p]["momentum_buffer"], torch.zeros_like(p)) for p in params)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.found_inf = torch.zeros(())
    opt.step()
    assert all(torch.isfinite(p).all() and not torch.equal(p, b) for p, b in zip(params, before))


def test_the_first_update_equals_plain_sgds():
    torch.manual_seed(1)
    ours = [torch.nn.Parameter(torch.randn(8, 4)) for _ in range(2)]
    plain = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    a, b = _sgd(ours), torch.optim.SGD([{"params": plain, "weight_decay": 1e-4}], lr=0.1, momentum=0.9)
    for _ in range(3):
        grads = [torch.randn(8, 4) for _ in ours]
        for p, q, g in zip(ours, plain, grads):
            p.grad, q.grad = g.clone(), g.clone()
        a.step()
        b.step()
    assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(ours, plain))


def test_master_weights_take_the_buffers_made_at_build_in_fp32():
    model = torch.nn.Linear(4, 2)
    opt = _sgd(list(model.parameters()))
    master = MasterWeights(model, opt, torch.float16)
    assert all(opt.state[p]["momentum_buffer"].dtype == torch.float32 for p in master.master_params)
    assert not any(p in opt.state for p in master.model_params)
