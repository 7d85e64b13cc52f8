"""A stand-in from outside harness/ that declares its benchmark-suite entry, its MLPerf category and its
metric's name in its ModelSpec alone: `harness.bench`'s matrix and the report's categories and metric
names find it with no file of harness/ naming it.

    HARNESS_MODELS=tests.models.suited python -m harness.bench --smoke --models suited
    HARNESS_MODELS=tests.models.suited python -m harness.train model=suited seed=1

A linear layer learns the sign of one coordinate of points drawn from the run's shared seed (no files:
its dataset folder stays empty); quality is the share of held-out points it gets right.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.interface import MLPerfTask, ModelOptions, ModelSpec, QualitySpec, RunContext, SuiteEntry, option

CATEGORY, METRIC, BENCHMARK = "speech", "hit rate", "suited_bench"  # what the tests look for


@dataclass
class SuitedOptions(ModelOptions):
    batch_size: int = option(32, ge=1)
    """Points per rank per step."""
    max_epochs: int = option(4, ge=1)
    """Epoch cap."""
    width: int = option(16, ge=1)
    """Width of the hidden layer."""
    learning_rate: float = option(0.2, gt=0)
    """SGD's rate."""


def prepare(cfg) -> Path:
    path = Path(str(cfg.dataset.path))
    path.mkdir(parents=True, exist_ok=True)
    return path


class Suited:
    def __init__(self, ctx: RunContext[SuitedOptions]):
        import torch

        self.torch, self.ctx, hp = torch, ctx, ctx.options
        gen = torch.Generator().manual_seed(1234)  # the same points on every rank and run
        x = torch.randn(1280, 4, generator=gen)
        y = (x[:, 0] > 0).long()
        self.x, self.y = x[256:].to(ctx.device), y[256:].to(ctx.device)
        self.ex, self.ey = x[:256].to(ctx.device), y[:256].to(ctx.device)
        self.batch = int(hp.batch_size)
        self.model = torch.nn.Sequential(torch.nn.Linear(4, hp.width), torch.nn.Tanh(), torch.nn.Linear(hp.width, 2))
        self.model.to(ctx.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=hp.learning_rate)
        self.lr_scheduler, self.grad_clip_norm = None, None
        self.gen = torch.Generator(device=ctx.device).manual_seed(ctx.shared_seed)

    def hyperparameters(self) -> dict[str, Any]:
        return {"global_batch_size": self.batch * self.ctx.world_size, "opt_name": "sgd",
                "opt_base_learning_rate": float(self.ctx.options.learning_rate)}

    def train_samples(self) -> int:
        return len(self.x)

    def eval_samples(self) -> int:
        return len(self.ex)

    def steps_per_epoch(self) -> int:
        return len(self.x) // (self.batch * self.ctx.world_size)

    def synthetic_batch(self):
        return self.x[:self.batch], self.y[:self.batch]

    def train_batches(self, epoch: int):
        from harness.interface.sharding import shard

        order = self.torch.randperm(len(self.x), generator=self.gen, device=self.ctx.device)
        step = self.batch * self.ctx.world_size
        for start in range(0, len(order) - step + 1, step):
            mine = shard(order[start:start + step], self.ctx.rank, self.ctx.world_size)
            yield self.x[mine], self.y[mine]

    def loss(self, model, batch):
        x, y = batch
        return self.torch.nn.functional.cross_entropy(model(x), y), len(x)

    def evaluate(self, model, epoch: int) -> float:
        out = model(self.ex)
        return (out.argmax(1) == self.ey).float().mean().item()


SPEC = ModelSpec(
    name="suited", options=SuitedOptions, sample_unit="points", build=Suited,
    summary="test stand-in: its suite entry, category and metric in its spec",
    task=MLPerfTask(benchmark=BENCHMARK, quality=QualitySpec("hits"), ruleset="0.7.0", rules_file=None,
                    real_dataset="suited_embedded", prepare=prepare),
    category=CATEGORY, metric=METRIC,
    suite=SuiteEntry(overrides=("model.width=8",), step_s=(0.01, 0.02)),
)

DATASETS = {
    "suited_embedded": {
        "dataset": {"name": "suited_embedded", "model": "suited", "path": "${data_root}/suited_embedded",
                    "generator": None},
        "model": {"target": 0.9},
    },
}
