"""One training step as every run takes it: the weights move, no gradient is left behind to hold
memory, the loss comes back detached with the samples it counts, clipping bounds the gradient before
the optimizer sees it, and the learning-rate schedule advances once a step.

    python -m harness.train model=ncf mode=throughput device=cpu
"""
from __future__ import annotations

import pytest
import torch

from harness import fastpath
from harness.config import compose
from harness.run.build import BuiltRun, build_run, context_for
from harness.run.step import forward_backward, train_step, update


@pytest.fixture
def run() -> BuiltRun:
    cfg = compose(["model=ncf", "mode=throughput", "device=cpu", "seed=1"])
    fastpath.resolve(cfg, cuda=False)
    return build_run(cfg, context_for(cfg))


def test_a_step_moves_the_weights_and_leaves_no_gradient_behind(run):
    before = [p.detach().clone() for p in run.params]
    batch = run.synthetic_batch()
    loss, terms, samples = train_step(run, batch)
    assert not loss.requires_grad and terms is None and samples == run.ctx.options.batch_size
    assert any(not torch.equal(b, p) for b, p in zip(before, run.params))
    assert all(p.grad is None for p in run.params)  # set to None, not zeroed: no memory held between steps


def test_clipping_bounds_the_gradient_the_optimizer_sees(run):
    run.bench.grad_clip_norm = 1e-3
    seen = []
    run.bench.optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: seen.append(torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(p.grad) for p in run.params if p.grad is not None]))))
    forward_backward(run, run.synthetic_batch())
    unclipped = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in run.params]))
    update(run)
    assert unclipped > 1e-3 and seen and float(seen[0]) == pytest.approx(1e-3, rel=1e-4)


def test_the_learning_rate_schedule_advances_once_a_step(run):
    run.bench.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(run.bench.optimizer, lambda step: 1.0 / (1 + step))
    base = run.bench.optimizer.param_groups[0]["initial_lr"]
    for _ in range(3):
        train_step(run, run.synthetic_batch())
    assert run.bench.optimizer.param_groups[0]["lr"] == pytest.approx(base / 4)
