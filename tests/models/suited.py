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

from harness.interface import MLPerfTask, ModelOptions, ModelSpec, QualitySpec, RunContext, SuiteEntry, option
from tests.models.points import PointsBenchmark

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


class Suited(PointsBenchmark):
    def __init__(self, ctx: RunContext[SuitedOptions]):
        import torch

        gen = torch.Generator().manual_seed(1234)  # the same points on every rank and run
        x = torch.randn(1280, 4, generator=gen)
        y = (x[:, 0] > 0).long()
        super().__init__(ctx, (x[256:], y[256:]), (x[:256], y[:256]), width=ctx.options.width, outputs=2)

    def loss(self, model, batch):
        x, y = batch
        return self.torch.nn.functional.cross_entropy(model(x), y), len(x)

    def evaluate(self, model, epoch: int) -> float:
        ex, ey = self.held_out
        return (model(ex).argmax(1) == ey).float().mean().item()


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
