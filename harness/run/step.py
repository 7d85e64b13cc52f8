"""One training step, as every run takes it: the forward and backward of a batch, then the update
(master weights, unscaling, clipping, the optimizer, the scheduler). The loop (harness/run/loop.py)
calls `train_step`; cuda_graph=true (harness/run/graph.py) captures `forward_backward` and calls
`update` after each replay.

    python -m harness.train model=ncf mode=throughput device=cpu
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from harness.interface import LossTerms
from harness.run.build import BuiltRun

# what a step returns: the loss, its named terms or None, the samples it counts
Step = Callable[[BuiltRun, Any], tuple[torch.Tensor, Optional[dict[str, torch.Tensor]], int]]


def train_step(run: BuiltRun, batch: Any) -> tuple[torch.Tensor, Optional[dict[str, torch.Tensor]], int]:
    """Forward, backward and the optimizer: (loss, its named terms or None, samples counted)."""
    loss, terms, samples = forward_backward(run, batch)
    update(run)
    return loss.detach(), None if terms is None else {k: v.detach() for k, v in terms.items()}, samples


def forward_backward(run: BuiltRun, batch: Any) -> tuple[torch.Tensor, Optional[dict[str, torch.Tensor]], int]:
    """The loss of a batch under the run's autocast and its (scaled) backward: the part of a step that
    cuda_graph=true captures (harness/run/graph.py)."""
    bench, scaler = run.bench, run.precision.scaler
    with run.precision.autocast():
        out, samples = bench.loss(run.trained, batch)
    loss, terms = (out.total, dict(out.terms)) if isinstance(out, LossTerms) else (out, None)
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    return loss, terms, samples


def update(run: BuiltRun, keep_grads: bool = False) -> None:
    """The rest of a step after backward: master weights, unscaling and clipping, the optimizer and
    the scheduler. `keep_grads`: leave the model's gradient tensors in place (a captured backward
    writes into them at every replay) instead of dropping them."""
    bench, precision, optimizer = run.bench, run.precision, run.bench.optimizer
    scaler, master = precision.scaler, precision.master
    if master is not None:
        master.grads_to_master()
    if bench.grad_clip_norm is not None:
        if scaler is not None:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(run.params, bench.grad_clip_norm)
    if scaler is not None:
        # sync point unless the optimizer takes the scaler itself (the fused ones): found-inf read on the host
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    if not keep_grads or master is not None:  # with master weights the optimizer's are the fp32 copies
        optimizer.zero_grad(set_to_none=True)
    if master is not None:
        master.master_to_model()
        if not keep_grads:
            run.module.zero_grad(set_to_none=True)
    if bench.lr_scheduler is not None:
        bench.lr_scheduler.step()
