"""What the stand-ins that learn generated points share (suited.py, twopart.py): the points and their
labels held on the run's device, a Linear-Tanh-Linear network trained by SGD, and each rank's share of
every shuffled global batch (the harness's own sharding), as a Benchmark hands them to the loop.

    HARNESS_MODELS=tests.models.twopart python -m harness.train model=twopart seed=1
"""
from __future__ import annotations

from typing import Any, Sequence

from harness.interface import RunContext
from harness.interface.sharding import shard


class PointsBenchmark:
    """`columns`: the training rows (the points first, then their labels), `held_out`: the evaluation's,
    both moved to the device; a batch is the same rows of every column. `ctx.options` gives batch_size
    and learning_rate."""

    def __init__(self, ctx: RunContext, columns: Sequence[Any], held_out: Sequence[Any], width: int, outputs: int):
        import torch

        self.torch, self.ctx = torch, ctx
        self.columns = tuple(c.to(ctx.device) for c in columns)
        self.held_out = tuple(c.to(ctx.device) for c in held_out)
        self.batch = int(ctx.options.batch_size)
        inputs = self.columns[0].shape[1]
        self.model = torch.nn.Sequential(torch.nn.Linear(inputs, width), torch.nn.Tanh(), torch.nn.Linear(width, outputs))
        self.model.to(ctx.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=ctx.options.learning_rate)
        self.lr_scheduler, self.grad_clip_norm = None, None
        self.gen = torch.Generator(device=ctx.device).manual_seed(ctx.shared_seed)

    def hyperparameters(self) -> dict[str, Any]:
        return {"global_batch_size": self.batch * self.ctx.world_size, "opt_name": "sgd",
                "opt_base_learning_rate": float(self.ctx.options.learning_rate)}

    def train_samples(self) -> int:
        return len(self.columns[0])

    def eval_samples(self) -> int:
        return len(self.held_out[0])

    def steps_per_epoch(self) -> int:
        return len(self.columns[0]) // (self.batch * self.ctx.world_size)

    def synthetic_batch(self):
        return tuple(c[:self.batch] for c in self.columns)

    def train_batches(self, epoch: int):
        order = self.torch.randperm(len(self.columns[0]), generator=self.gen, device=self.ctx.device)
        step = self.batch * self.ctx.world_size
        for start in range(0, len(order) - step + 1, step):
            mine = shard(order[start:start + step], self.ctx.rank, self.ctx.world_size)
            yield tuple(c[mine] for c in self.columns)
