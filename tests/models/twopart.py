"""A tiny time-to-train model whose quality has two parts, like Mask R-CNN's BBOX and SEGM.

    HARNESS_MODELS=tests.models.twopart python -m harness.train model=twopart seed=1

Two logistic heads on a shared linear layer learn two labellings of generated points; quality is
{"A": accuracy of head A, "B": accuracy of head B} and the run succeeds when both reach their
targets. Its loss has two named terms, one per head. Its data is a generated .npz under data_root;
its rules file asks for both parts.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.interface import LossTerms, MLPerfTask, ModelOptions, ModelSpec, QualitySpec, RunContext
from harness.interface import generated
from tests.models.points import PointsBenchmark

RULES = Path(__file__).resolve().parent / "twopart_rules.yaml"


@dataclass
class TwoPartOptions(ModelOptions):
    batch_size: int = 64
    """Points per rank per step."""
    max_epochs: int = 8
    """Epoch cap."""
    target: Any = None
    """Both parts' targets (set by the dataset)."""
    learning_rate: float = 0.05
    """SGD rate."""
    hidden: int = 16
    """Width of the shared layer."""
    nan_at_step: int = -1
    """Loss term B is NaN at this step (1-based) on rank 0; -1: never."""
    first_batch_delay_s: float = 0.0
    """The first epoch's first batch comes this many seconds late, as after a slow loader's start-up."""
    last_rank_batch_delay_s: float = 0.0
    """Each batch of the last rank comes this many seconds late, as from one rank's slow loader."""


def prepare(cfg) -> Path:
    g = cfg.dataset.generator

    def write(folder: Path) -> None:
        rng = np.random.default_rng(int(g.seed))
        x = rng.normal(size=(int(g.points), 4)).astype(np.float32)
        a = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
        b = (x[:, 2] - 0.5 * x[:, 3] > 0).astype(np.int64)
        np.savez(folder / "points.npz", x=x, a=a, b=b)

    return generated.ensure(cfg.dataset.path, "tests.models.twopart", 1, {"points": int(g.points), "seed": int(g.seed)},
                            write)


class TwoPart(PointsBenchmark):
    def __init__(self, ctx: RunContext[TwoPartOptions]):
        import torch

        data = np.load(Path(ctx.data_dir) / "points.npz")
        n_eval = len(data["x"]) // 4
        columns = [torch.from_numpy(data[k]) for k in ("x", "a", "b")]
        super().__init__(ctx, [c[n_eval:] for c in columns], [c[:n_eval] for c in columns],
                         width=ctx.options.hidden, outputs=4)
        self.nan_step, self.steps = ctx.options.nan_at_step if ctx.rank == 0 else -1, 0

    def train_batches(self, epoch: int):
        if epoch == 1:
            time.sleep(self.ctx.options.first_batch_delay_s)
        late = self.ctx.options.last_rank_batch_delay_s if self.ctx.rank == self.ctx.world_size - 1 else 0.0
        for batch in super().train_batches(epoch):
            time.sleep(late)
            yield batch

    def loss(self, model, batch):
        x, a, b = batch
        out = model(x)
        f = self.torch.nn.functional.cross_entropy
        self.steps += 1
        head_b = f(out[:, 2:], b) * (float("nan") if self.steps == self.nan_step else 1.0)
        return LossTerms.summed({"A": f(out[:, :2], a), "B": head_b}), len(x)

    def evaluate(self, model, epoch: int) -> dict[str, float]:
        ex, ea, eb = self.held_out
        out = model(ex)
        return {"A": (out[:, :2].argmax(1) == ea).float().mean().item(),
                "B": (out[:, 2:].argmax(1) == eb).float().mean().item()}


SPEC = ModelSpec(
    name="twopart", options=TwoPartOptions, sample_unit="samples", build=TwoPart,
    summary="test stand-in: a quality of two parts",
    task=MLPerfTask(benchmark="twopart", quality=QualitySpec("acc", parts=("A", "B")), ruleset="0.7.0",
                    rules_file=RULES, real_dataset="twopart_embedded", prepare=prepare),
)

DATASETS = {
    "twopart_embedded": {
        "dataset": {"name": "twopart_embedded", "model": "twopart", "path": "${data_root}/twopart_embedded",
                    "generator": {"points": 4000, "seed": 0}},
        "model": {"target": {"A": 0.9, "B": 0.85}},
    },
}
