"""What SSD and Mask R-CNN share around their training split: the state a build starts from, and the
Benchmark methods that read it (counts, findings, this rank's batches). mode=throughput reads no
dataset: no split, and the run's throughput_epoch_steps stand for an epoch's steps.

    class SSDBenchmark(CocoTraining): ...        # reference_models/ssd/benchmark.py
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from harness.interface import RunContext
from reference_models.detection.coco import CocoSplit, split_findings
from reference_models.vision import backend


class CocoTraining:
    """A detection benchmark's training side; the model's __init__ sets `val`, calls `start_training`,
    and with a dataset sets `train`, `n_train`, `loader`, `_steps` and, where the device makes the
    batches (a GPU decoder, a side stream), `_device_batches`."""

    val: Optional[CocoSplit]
    loader: Any

    def start_training(self, ctx: RunContext, decode: str) -> None:
        """No training split read yet: the run's throughput_epoch_steps, and where JPEGs would be decoded."""
        self._steps, self.n_train = ctx.throughput_epoch_steps, 0
        self.train: Optional[CocoSplit] = None  # mode=throughput reads no dataset
        self.decode = backend.resolve(decode, ctx.device)
        self._device_batches: Any = None

    def data_findings(self) -> dict[str, int]:
        return split_findings(self.train, self.val)

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        return self.n_train  # training images with annotations, as the references count them

    def eval_samples(self) -> int:
        assert self.val is not None  # mode=train, where there is a dataset
        return len(self.val)

    def train_batches(self, epoch: int) -> Iterator[Any]:
        """The loader's host batches, or the batches the device made from them ahead of the step."""
        if self._device_batches is not None:
            yield from self._device_batches(self.loader.epoch(epoch))
            return
        yield from self.loader.epoch(epoch)
