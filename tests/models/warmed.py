"""A stand-in whose step leaves traces a warm-up must wipe: batch-norm statistics (buffers), dropout (the
random generators), synthetic batches drawn from the generator that orders its epochs and from torch's, and two
batch shapes in `warmup_batches()`. It counts the forwards it is asked for.

    HARNESS_MODELS=tests.models.warmed python -m harness.train model=warmed seed=1 warm_up=true

A Linear-BatchNorm-Dropout-Tanh-Linear network learns the sign of one coordinate of points drawn from the
run's shared seed (no files); quality is the share of held-out points it gets right.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.interface import MLPerfTask, ModelOptions, ModelSpec, QualitySpec, RunContext, option
from tests.models.points import PointsBenchmark
from tests.models.suited import Suited, prepare


@dataclass
class WarmedOptions(ModelOptions):
    batch_size: int = option(32, ge=2)
    """Points per rank per step (a warm-up batch of half as many is its second shape)."""
    max_epochs: int = 3
    """Epoch cap; the target is out of reach in three, so every run trains all three."""
    target: float = 0.999
    """Held-out accuracy to reach."""
    learning_rate: float = 0.2
    """SGD's rate."""


class Warmed(Suited):
    def __init__(self, ctx: RunContext[WarmedOptions]):
        import torch

        points = torch.randn(1200, 4, generator=torch.Generator().manual_seed(ctx.shared_seed))
        labels = (points[:, 1] > 0).long()
        PointsBenchmark.__init__(self, ctx, [points[200:], labels[200:]], [points[:200], labels[:200]], width=16,
                                 outputs=2)
        nn = torch.nn
        self.model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.Dropout(0.3), nn.Tanh(),
                                   nn.Linear(16, 2)).to(ctx.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=ctx.options.learning_rate)
        self.forwards = 0

    def synthetic_batch(self):
        # from the generator that also orders the epochs (self.gen), as NCF's draws from its negatives' generator
        torch = self.torch
        return torch.randn(self.batch, 4, generator=self.gen), torch.randint(0, 2, (self.batch,))

    def warmup_batches(self):
        torch = self.torch
        return [self.synthetic_batch(), (torch.randn(self.batch // 2, 4), torch.randint(0, 2, (self.batch // 2,)))]

    def loss(self, model, batch):
        self.forwards += 1
        return super().loss(model, batch)


SPEC = ModelSpec(
    name="warmed", options=WarmedOptions, sample_unit="samples", build=Warmed,
    summary="test stand-in: a step with buffers, dropout and two batch shapes",
    task=MLPerfTask(benchmark="warmed", quality=QualitySpec("accuracy"), ruleset="0.7.0",
                    rules_file=None, real_dataset="warmed_embedded", prepare=prepare),
)

DATASETS = {"warmed_embedded": {"dataset": {"name": "warmed_embedded", "model": "warmed",
                                          "path": "${data_root}/warmed_embedded",
                                          "generator": None}}}
