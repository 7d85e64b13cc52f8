"""The optimizers and the learning-rate schedule of MLPerf's ResNet-50, and the keys it logs (Mask R-CNN trains
with the same SGD).

- SGD with momentum (torch.optim.SGD; one fused kernel on CUDA), or LARS (below);
- linear warm-up from 0 over `model.lr_warmup_epochs`, then polynomial decay of power 2 to 0.0001 at the last
  step of `max_epochs`, as NVIDIA's MLPerf v0.7 ResNet (PolySchedule) and the reference's LARS
  schedule (PolynomialDecayWithWarmup) run it. Steps count from 1: the first update uses
  base x 1/warmup_steps.
- the parameter groups spare BatchNorm and biases from weight decay (and LARS's trust ratio).

    python -c "from reference_models.vision.optim import PolyWarmup; print(PolyWarmup(1.0, 5, 20).rate(5))"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import torch


@dataclass(frozen=True)
class PolyWarmup:
    base_lr: float
    warmup_steps: int
    total_steps: int
    end_lr: float = 0.0001
    power: float = 2.0

    def rate(self, step: int) -> float:
        """The learning rate of 1-based step `step`."""
        if step <= self.warmup_steps:
            return self.base_lr * step / self.warmup_steps
        span = max(self.total_steps - self.warmup_steps, 1)
        left = max(0.0, 1.0 - (step - self.warmup_steps) / span)
        return self.end_lr + (self.base_lr - self.end_lr) * left ** self.power

    def scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        # LambdaLR's step 0 is the first update: shift by one; every group follows the same rate
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: self.rate(step + 1) / self.base_lr)

    @property
    def decay_steps(self) -> int:
        return self.total_steps - self.warmup_steps


class LARS(torch.optim.Optimizer):
    """Momentum SGD whose step on each weight tensor is scaled by the trust ratio
    eta * |w| / (|g| + weight_decay * |w| + epsilon) (You, Gitman and Ginsburg, 2017), for the groups
    marked `lars` (weights); the other groups (BatchNorm, biases) take plain momentum steps without
    decay, as the MLPerf reference's skip list has it.

    torch ships no LARS. The reference's TF optimizer keeps the learning rate inside the momentum
    buffer; NVIDIA's MLPerf MXNet optimizer rescales its momentum by the rate's change each step,
    which amounts to what this one does, PyTorch's convention: buf = m * buf + trust * (g + wd * w),
    w -= lr * buf. Both agree while the rate is constant."""

    def __init__(self, params: Iterable[Any], lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 0.001, epsilon: float = 0.0):
        if lr < 0 or momentum < 0 or weight_decay < 0 or eta <= 0 or epsilon < 0:
            raise ValueError(f"LARS needs lr, momentum, weight_decay, epsilon >= 0 and eta > 0; got lr={lr}, "
                             f"momentum={momentum}, weight_decay={weight_decay}, eta={eta}, epsilon={epsilon}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, eta=eta,
                                      epsilon=epsilon, lars=True))

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            wd = group["weight_decay"]
            updates = torch._foreach_add(grads, params, alpha=wd) if wd else [g.clone() for g in grads]
            if group["lars"]:
                w = torch.stack(torch._foreach_norm(params))
                g = torch.stack(torch._foreach_norm(grads))
                trust = torch.where((w > 0) & (g > 0), group["eta"] * w / (g + wd * w + group["epsilon"]),
                                    torch.ones_like(w))
                torch._foreach_mul_(updates, list(trust.unbind()))
            bufs = []
            for p, u in zip(params, updates):
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = u  # the first step: buf = update, as torch's SGD starts
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(u)
                bufs.append(state["momentum_buffer"])
            torch._foreach_add_(params, bufs, alpha=-group["lr"])
        return loss


def make_optimizer(name: str, groups: list[dict], lr: float, momentum: float, eta: float, epsilon: float,
                   fused: bool) -> torch.optim.Optimizer:
    if name == "sgd":
        plain = [{k: v for k, v in g.items() if k != "lars"} for g in groups]
        sgd = torch.optim.SGD(plain, lr=lr, momentum=momentum, fused=fused or None)
        if fused and momentum:
            # PyTorch's fused SGD makes its momentum buffers with empty_like on the first step and skips the
            # kernel when the GradScaler found an inf there: the buffers keep uninitialised memory, and the
            # next step's update turns the weights NaN (amp's first steps often overflow). Zero buffers make
            # a step that is never "first"; with dampening 0, momentum x 0 + grad is the first step's update.
            for group in sgd.param_groups:
                for p in group["params"]:
                    sgd.state[p]["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return sgd
    if name == "lars":
        return LARS(groups, lr=lr, momentum=momentum, eta=eta, epsilon=epsilon)
    raise ValueError(f"model.optimizer={name}: choose sgd or lars")


def mlperf_keys(name: str, schedule: PolyWarmup, warmup_epochs: float, momentum: float, weight_decay: float,
                epsilon: float) -> dict[str, Any]:
    """The optimizer's keys as closed_resnet_sgd.yaml / closed_resnet_lars.yaml require them."""
    keys: dict[str, Any] = {"opt_name": name}
    if name == "lars":
        keys["lars_epsilon"] = epsilon
    keys.update({
        f"{name}_opt_base_learning_rate": schedule.base_lr,
        f"{name}_opt_end_learning_rate": schedule.end_lr,
        f"{name}_opt_learning_rate_decay_poly_power": schedule.power,
        f"{name}_opt_learning_rate_decay_steps": schedule.decay_steps,
        f"{name}_opt_weight_decay": weight_decay,
        f"{name}_opt_momentum": momentum,
        # the SGD rules name the warm-up key without the prefix, the LARS rules with it
        ("opt_learning_rate_warmup_epochs" if name == "sgd" else "lars_opt_learning_rate_warmup_epochs"): warmup_epochs,
    })
    return keys
