"""The narrow interface between the harness and a reference model.

The harness owns the loop (harness/run/loop.py): epochs, precision, backward, optimizer and
scheduler steps, the evaluation schedule, MLPerf events, timing. A model supplies only what differs
between models: its data, its loss on a batch, its quality metric and the hyperparameters MLPerf
logs. Two kinds:

- a time-to-train model (NCF, GNMT, ...): a `ModelSpec` with an `MLPerfTask` (benchmark name,
  quality metric and direction, ruleset, dataset preparation); `build` returns a `Benchmark`;
- a throughput-only model (the GPU suite's BERT, Transformer-XL, ...): a `ModelSpec` without a task;
  `build` returns a `ThroughputBenchmark` fed synthetic batches; it runs with mode=throughput only.

A new model is a package under reference_models/ with a `SPEC` added to harness/registry.py and a
conf/model/<name>.yaml (docs/adding_a_model.md). Nothing here imports torch at run time, so the
report and the checker can read the registry without it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Protocol

from harness.interface.quality import Quality, QualitySpec
from harness.interface.suite import CATEGORIES, OTHER, SuiteEntry

if TYPE_CHECKING:
    import torch
    from omegaconf import DictConfig


def scaled_learning_rate(lr: float, rule: str, global_batch: int, reference_batch: int) -> float:
    """A preset's learning rate at another global batch than the one it was tuned at (the batch
    policy: the per-rank batch stays fixed, so more ranks make a larger global batch)."""
    ratio = global_batch / reference_batch
    if rule == "none":
        return lr
    if rule == "linear":
        return lr * ratio
    if rule == "sqrt":
        return lr * math.sqrt(ratio)
    raise ValueError(f"lr_scaling={rule}: choose one of none, linear, sqrt")


class DataError(RuntimeError):
    """The dataset is missing or malformed; the message says how to fix it, in one line."""


@dataclass(frozen=True)
class Logged:
    """A hyperparameter value logged with MLPerf metadata, e.g. max_sequence_length's method."""

    value: Any
    metadata: dict[str, Any]


@dataclass(frozen=True)
class RunContext:
    """What a model needs to know about the run it is built for."""

    cfg: "DictConfig"  # the whole resolved config; the model reads cfg.model and cfg.dataset
    data_dir: Optional[Path]  # the dataset folder from MLPerfTask.prepare; None when synthetic
    synthetic: bool  # mode=throughput: no dataset; train_batches yields random batches of realistic shape
    device: "torch.device"
    rank: int
    world_size: int
    seed: int  # this rank's seed; data order shared by all ranks uses `shared_seed`
    shared_seed: int  # the same on every rank


class ThroughputBenchmark(Protocol):
    """A model built for one run that the loop can step: what every model supplies.

    `loss` must call `self.model`: on several ranks the harness replaces `model` with its
    DistributedDataParallel wrapper after `build`, and the optimizer keeps the same parameters.
    """

    model: "torch.nn.Module"
    optimizer: "torch.optim.Optimizer"
    lr_scheduler: Optional[Any]  # stepped once per training step, after the optimizer; or None
    grad_clip_norm: Optional[float]  # max global gradient norm, or None

    def hyperparameters(self) -> dict[str, Any]:
        """Keys logged between init_start and init_stop (global_batch_size, opt_*, ...) and kept in
        result.json; a value may be a Logged to carry metadata."""

    def steps_per_epoch(self) -> int:
        """Training steps per epoch on each rank (for the progress display); cfg.throughput_steps
        when synthetic."""

    def train_batches(self, epoch: int) -> Iterable[Any]:
        """This rank's batches for one epoch (1-based), already on the device. When synthetic,
        random batches shaped like real ones, without end: the harness stops when it has enough."""

    def loss(self, batch: Any) -> tuple["torch.Tensor", int]:
        """The training loss of a batch and the samples (or tokens) it counts for the throughput meter."""


class Benchmark(ThroughputBenchmark, Protocol):
    """A time-to-train model built for one run: a ThroughputBenchmark that can also be judged."""

    def train_samples(self) -> int:
        """Training samples per epoch, as MLPerf's train_samples key counts them."""

    def eval_samples(self) -> int:
        """Evaluation samples, as MLPerf's eval_samples key counts them."""

    def evaluate(self, epoch: int) -> Quality:
        """The quality over the whole evaluation set, identical on every rank (harness.interface.
        gather helps): a number, or a mapping with the task's quality parts. `epoch` is the epoch
        just trained, or the samples trained so far under a schedule by samples."""


@dataclass(frozen=True)
class MLPerfTask:
    """What makes a model an MLPerf time-to-train benchmark."""

    benchmark: str  # MLPerf's submission_benchmark value
    quality: QualitySpec  # the metric, its direction and parts
    ruleset: str  # MLPerf logging ruleset its logs follow, e.g. "0.7.0"
    rules_file: Optional[Path]  # the harness's rules file where MLPerf ships none for this benchmark
    real_dataset: str  # the dataset config of the real-scale preset (the MLPerf hyperparameters)
    prepare: Callable[["DictConfig"], Path]  # find or generate the dataset; returns its folder
    # python -m harness.check_data: check(cfg, folder, report, decode) validates the folder without
    # training, filling a harness.interface.findings.DataReport (decode=False: headers only)
    check: Optional[Callable[["DictConfig", Path, Any, bool], None]] = None


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry: how the harness finds, checks and builds a reference model."""

    name: str  # the config name: model=<name>
    options: type  # the typed config: a harness.interface.ModelOptions dataclass
    sample_unit: str  # what the throughput meter counts: "samples", "tokens", "images", ...
    build: Callable[[RunContext], ThroughputBenchmark]  # a Benchmark when `task` is set
    task: Optional[MLPerfTask] = None  # None: a throughput-only model
    summary: str = ""  # one line for listings
    category: str = OTHER  # MLPerf's area, for the report's geometric means: harness.interface.suite.CATEGORIES
    metric: str = ""  # what eval_accuracy measures in tables and plots; "": the quality's name (task.quality.name)
    suite: Optional[SuiteEntry] = None  # its cells in `python -m harness.bench`; None: not in the suite

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"ModelSpec {self.name}: category={self.category!r}; choose one of {', '.join(CATEGORIES)}")
        if not self.metric and self.task is not None:
            object.__setattr__(self, "metric", self.task.quality.name)

    @property
    def throughput_only(self) -> bool:
        return self.task is None

    @property
    def benchmark(self) -> str:
        """MLPerf's benchmark name, or the model's own name for a throughput-only model."""
        return self.task.benchmark if self.task else self.name
