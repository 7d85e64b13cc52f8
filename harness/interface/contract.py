"""The narrow interface between the harness and a reference model.

The harness owns the loop (harness/run/loop.py): epochs, precision, backward, optimizer and
scheduler steps, the evaluation schedule, MLPerf events, timing, DDP, the copy of batches to the
device, mode=throughput and which module an evaluation sees. A model supplies only what differs
between models: its batches, its loss on a batch, one synthetic batch of its real shapes, its quality
metric and the hyperparameters MLPerf logs. Two kinds:

- a time-to-train model (NCF, GNMT, ...): a `ModelSpec` with an `MLPerfTask` (benchmark name,
  quality metric and direction, ruleset, dataset preparation); `build` returns a `Benchmark`;
- a throughput-only model (the GPU suite's BERT, Transformer-XL, ...): a `ModelSpec` without a task;
  `build` returns a `ThroughputBenchmark`; it runs with mode=throughput only.

In mode=throughput `build` gets no dataset (`ctx.data_dir` is None): the model is built at the sizes
its options give, and the harness trains it on `synthetic_batch()`, moved to the device once.

A new model is a package under reference_models/ with a `SPEC`, added to harness/registry.py, and its
presets in reference_models/<name>/conf/ (docs/adding_a_model.md). Nothing here imports torch at run
time, so the report and the checker can read the registry without it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Mapping, Optional, Protocol, TypeVar, Union, cast

from harness.interface.fast_declaration import FastPath
from harness.interface.options import ModelOptions
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


O = TypeVar("O", bound=ModelOptions)


THROUGHPUT_EPOCH_STEPS = 200


@dataclass(frozen=True)
class RunContext(Generic[O]):
    """What a model needs to know about the run it is built for; `RunContext[NCFOptions]` in a model's
    `build` types `options` as its own dataclass."""

    cfg: "DictConfig"  # the whole resolved config: cfg.dataset, and the harness's own keys (max_epochs)
    data_dir: Optional[Path]  # the dataset folder from MLPerfTask.prepare; None in mode=throughput
    device: "torch.device"
    rank: int
    world_size: int
    seed: int  # this rank's seed; data order shared by all ranks uses `shared_seed`
    shared_seed: int  # the same on every rank

    @property
    def throughput_epoch_steps(self) -> int:
        """mode=throughput: the steps one epoch of the model's schedule counts, which its learning-rate
        schedule steps through: throughput_steps where it is set, else THROUGHPUT_EPOCH_STEPS (the
        windows are then timed, and the schedule stays the one a 200-step window had)."""
        return int(self.cfg.get("throughput_steps") or THROUGHPUT_EPOCH_STEPS)

    def convert_layers(self, model: "torch.nn.Module") -> None:
        """Apply the run's conversions of the model's layers (fp8=true: its linear layers multiply in fp8,
        harness/interface/fp8.py). The harness applies them to the model a Benchmark returns; a model that
        shards itself (`sharded`) calls this before sharding, whose shards cannot be converted."""
        if self.cfg.get("fp8"):
            from harness.interface import fp8

            fp8.convert(model, self.device, str(self.cfg.model.name))

    @cached_property
    def options(self) -> O:
        """The model's options (cfg.model) as its options dataclass, every value resolved and typed, made
        when the model first reads them: in `build`, after the harness has set its fast path's options."""
        from omegaconf import OmegaConf

        node = self.cfg.model
        options = OmegaConf.to_object(node) if OmegaConf.is_config(node) else node
        if not isinstance(options, ModelOptions):
            raise TypeError(f"cfg.model is {type(options).__name__}, not a model's options dataclass: compose the "
                            "config with harness.config.compose, whose model schema is the model's options")
        return cast(O, options)


@dataclass(frozen=True)
class LossTerms:
    """A loss of several named parts (Mask R-CNN's loss dict, SSD's box and class losses): `total` is
    what backward sees, `terms` its parts, each logged per epoch (result.json's loss_terms,
    TensorBoard's train/loss/<term>) and named when one turns NaN."""

    total: "torch.Tensor"
    terms: Mapping[str, "torch.Tensor"]

    @classmethod
    def summed(cls, terms: Mapping[str, "torch.Tensor"]) -> "LossTerms":
        """Terms whose fp32 sum, in their order, is the loss."""
        return cls(sum(t.float() for t in terms.values()), dict(terms))  # type: ignore[arg-type]


Loss = Union["torch.Tensor", LossTerms]


class ThroughputBenchmark(Protocol):
    """A model built for one run that the loop can step: what every model supplies.

    `model` is the module as built. The harness trains it through DistributedDataParallel on several
    ranks (it hands `loss` the module to call) and evaluates the module itself (`evaluate`): a model
    never sees DDP's wrapper. A model that spreads itself over the ranks instead (FSDP's fully_shard,
    which must come before its optimizer takes the parameters, so in `build`) sets an attribute
    `sharded = True`: the harness then trains and evaluates the module as built, with no DDP
    (`sharded_by`; absent or False: DDP).
    """

    model: "torch.nn.Module"
    optimizer: "torch.optim.Optimizer"
    lr_scheduler: Optional[Any]  # stepped once per training step, after the optimizer; or None
    grad_clip_norm: Optional[float]  # max global gradient norm, or None

    def hyperparameters(self) -> dict[str, Any]:
        """Keys logged between init_start and init_stop (global_batch_size, opt_*, ...) and kept in
        result.json; a value may be a Logged to carry metadata."""

    def synthetic_batch(self) -> Any:
        """One batch of random values in the shapes and types of a real one, as train_batches yields
        them (on the host, or made on ctx.device). mode=throughput moves it to the device once and
        trains on it at every step: the measurement is of training alone."""

    def loss(self, model: "torch.nn.Module", batch: Any) -> tuple[Loss, int]:
        """The training loss of a batch, computed by calling `model` (the module to train: DDP's
        wrapper on several ranks), and the samples (or tokens) the batch counts for the throughput
        meter. A tensor, or LossTerms where the loss has named parts. `batch` is on the device."""


class Benchmark(ThroughputBenchmark, Protocol):
    """A time-to-train model built for one run: a ThroughputBenchmark with data that can be judged."""

    def steps_per_epoch(self) -> int:
        """Training steps per epoch on each rank (for the progress display)."""

    def train_batches(self, epoch: int) -> Iterable[Any]:
        """This rank's batches for one epoch (1-based). The harness moves each to the device as
        `harness.run.feed.to_device` says: a tensor, a tuple, list or dict of them, or an object with
        its own `to(device)` (which may keep some tensors on the host, as GNMT's lengths), returning
        tensors in those containers or in a dataclass (so that the harness finds them to mark for the
        compute stream); on CUDA it copies the next batch on a side stream while the current one
        trains. Pinned host memory (make_loader pins it on CUDA) lets the copies overlap."""

    def train_samples(self) -> int:
        """Training samples per epoch, as MLPerf's train_samples key counts them."""

    def eval_samples(self) -> int:
        """Evaluation samples, as MLPerf's eval_samples key counts them."""

    def evaluate(self, model: "torch.nn.Module", epoch: int) -> Quality:
        """The quality over the whole evaluation set, identical on every rank (harness.interface.
        gather helps): a number, or a mapping with the task's quality parts. `model` is the module
        itself (never DDP's wrapper), in eval mode, under torch.no_grad() and the run's autocast,
        with rank 0's buffers (batch-norm statistics) on every rank. `epoch` is the epoch just
        trained, or the samples trained so far under a schedule by samples.

    Optional: `warmup_batches() -> Iterable[batch]`, synthetic batches of each shape training sees, the same
    count and order on every rank, that the warm-up steps before run_start (harness/run/warmup.py);
    without it, [synthetic_batch()]. For that warm-up, `synthetic_batch` and `loss` leave the model as they
    found it but for its buffers and random generators (held as attributes), which the harness puts back: a
    step counter or a cache they kept would differ in a run warmed up."""


def sharded_by(bench: ThroughputBenchmark) -> bool:
    """Whether the model sharded itself over the ranks (its `sharded` attribute): no DDP for it."""
    return bool(getattr(bench, "sharded", False))


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
    # the generator's spec from dataset.generator's parameters (keywords): a ValueError for counts that
    # cannot make a dataset this model trains on, said before anything is written (generator_cli.check_config)
    generator: Optional[Callable[..., Any]] = None


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry: how the harness finds, checks and builds a reference model."""

    name: str  # the config name: model=<name>
    options: type  # the typed config: a harness.interface.ModelOptions dataclass
    sample_unit: str  # what the throughput meter counts: "samples", "tokens", "images", ...
    # a Benchmark when `task` is set; a model package's SPEC names it with harness.interface.lazy, so that
    # reading the registry imports no torch
    build: Callable[[RunContext[Any]], ThroughputBenchmark]
    task: Optional[MLPerfTask] = None  # None: a throughput-only model
    summary: str = ""  # one line for listings
    category: str = OTHER  # MLPerf's area, for the report's geometric means: harness.interface.suite.CATEGORIES
    metric: str = ""  # what eval_accuracy measures in tables and plots; "": the quality's name (task.quality.name)
    suite: Optional[SuiteEntry] = None  # its cells in `python -m harness.bench`; None: not in the suite
    fast: FastPath = FastPath()  # its measured fast path on CUDA, taken by default there (harness/fastpath.py)
    gpu_precision: str = "amp"  # the mixed precision its MLPerf reference trains in: the default on CUDA

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
