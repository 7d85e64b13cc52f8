"""What the throughput-only models (BERT, Transformer-XL, Tacotron2, WaveGlow) share: one synthetic
batch of real shape (the harness repeats it), Adam(W) through PyTorch's fused kernel on CUDA, an
optional torch.compile, and the hyperparameters every such run logs.

    python -m harness.train model=bert_large mode=throughput precision=amp
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from harness.interface import RunContext, compile_kwargs

NO_DECAY = ("bias", "norm")  # BERT's rule: no weight decay on biases and LayerNorms


def adam(model: torch.nn.Module, device: torch.device, lr: float, betas: tuple[float, float], eps: float,
         weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """AdamW over every parameter, weight decay off for biases and norms; one fused kernel on CUDA
    (the CPU has no fused Adam)."""
    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (plain if weight_decay == 0 or any(n in name for n in NO_DECAY) else decay).append(p)
    groups = [g for g in ({"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0})
              if g["params"]]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=device.type == "cuda")


class SyntheticBenchmark:
    """A throughput-only model built for one run: one random batch, made once on the device (the
    harness trains on it at every step). Subclasses set `model`, `optimizer`, `grad_clip_norm` and
    `batch`, and define `loss`."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    lr_scheduler: Optional[Any] = None  # no convergence target: a schedule would change nothing measured
    grad_clip_norm: Optional[float] = None
    batch: Any = None

    def __init__(self, ctx: RunContext, workload: Optional[str] = None):
        self.ctx, self.hp, self.device = ctx, ctx.options, ctx.device
        self.workload = workload
        self.global_batch = int(self.hp.batch_size) * ctx.world_size
        self.generator = torch.Generator(device=ctx.device).manual_seed(ctx.seed)

    def compile_if_asked(self, parts: Optional[Sequence[torch.nn.Module]] = None) -> None:
        """model.compile=true on CUDA: Inductor fuses the elementwise work between the matmuls of the
        model (or of `parts` of it); the compilation happens in the first steps, which warm-up must cover."""
        if getattr(self.hp, "compile", False) and self.device.type == "cuda":
            for part in parts or [self.model]:
                part.compile(**compile_kwargs(getattr(self.hp, "compile_mode", "default")))

    def hyperparameters(self) -> dict[str, Any]:
        """A model with several benchmarked workloads names the one it ran (BERT's "squad384")."""
        group = self.optimizer.param_groups[0]
        workload = {"workload": self.workload} if self.workload else {}
        return {"global_batch_size": self.global_batch, **workload, "opt_name": type(self.optimizer).__name__.lower(),
                "opt_base_learning_rate": group["lr"], "parameters": sum(p.numel() for p in self.model.parameters())}

    def synthetic_batch(self) -> Any:
        return self.batch
