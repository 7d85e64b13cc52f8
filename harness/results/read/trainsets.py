"""The samples of one epoch of a benchmark, as its reference trains them, for logs whose `train_samples` is no
epoch (harness.results.read.intervals derives throughput from it).

MLPerf's `train_samples` is the training set's size, but published logs write other counts under that key:

- RetinaNet logs (`ssd` in v2.0-v4.1, `retinanet` from v5.0) of every submitter from v3.0 on write the optimizer
  steps of an epoch (4,572 at a global batch of 256; 576 at 2,048): steps x global batch is the training set;
- Mask R-CNN logs of one code base write the run's step budget (40,000 at a batch of 96, 20,000 at 256), which
  is neither the training set nor its steps.

The training sets (each benchmark's reference and its dataset's documentation): OpenImages' MLPerf subset for
RetinaNet, 1,170,301 images; COCO 2017 train for SSD-ResNet34 (v0.5-v0.7) and Mask R-CNN, 118,287 images, of
which the references train on the 117,266 that carry annotations (a log may count either).
"""
from __future__ import annotations

from typing import Optional

# benchmark -> the sizes its training sets have been logged as, across rounds
TRAINING_SET: dict[str, tuple[int, ...]] = {
    "ssd": (1_170_301, 117_266, 118_287),
    "retinanet": (1_170_301,),
    "maskrcnn": (117_266, 118_287),
}
# benchmarks that have trained one dataset in every round: a count that is no epoch reads as this one (not "ssd":
# a log does not say which of COCO and OpenImages it trained, so its count stays as written)
ONE_SET: dict[str, int] = {"maskrcnn": 117_266, "retinanet": 1_170_301}
# a count this close to a training set is that set: drop_last, and padding up to whole steps per rank, move the
# samples of an epoch by less than a global batch (576 steps x 2,048 is 0.8% over OpenImages' 1,170,301)
CLOSE = 0.03


def epoch_samples(benchmark: Optional[str], train_samples: float, global_batch: Optional[float]) -> float:
    """The samples of an epoch that a log's `train_samples` stands for: as written where it is the benchmark's
    training set, or where the benchmark's training set is not known here; times the global batch where that
    product is the training set (a count of steps); else the benchmark's training set where it has had only one
    (a count that is no epoch: the run's step budget), or as written."""
    sets = TRAINING_SET.get(benchmark or "")
    if not sets or _near(train_samples, sets):
        return float(train_samples)
    if global_batch and _near(train_samples * global_batch, sets):
        return float(train_samples) * global_batch
    return float(ONE_SET.get(benchmark or "", train_samples))


def _near(count: float, sets: tuple[int, ...]) -> bool:
    return any(abs(count / size - 1) <= CLOSE for size in sets)
