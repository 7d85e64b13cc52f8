"""The typed schema of conf/config.yaml: the harness's own options (HarnessConfig), each with its
default, type, bound and documentation (harness.interface.options), stored for Hydra as
`harness_schema`, conf/config.yaml's first default; a model's options are its own dataclass.

    python -m harness.train --help
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from harness.interface.options import Choice, option
from harness.fastpath import Precision


class Device(Choice):
    auto = "auto"  # CUDA when PyTorch sees a GPU, else the CPU
    cpu = "cpu"
    cuda = "cuda"


class Mode(Choice):
    train = "train"
    throughput = "throughput"


class Division(Choice):
    closed = "closed"
    open = "open"


class Status(Choice):
    onprem = "onprem"
    cloud = "cloud"
    preview = "preview"
    research = "research"


@dataclass
class MLPerfFields:
    """The submission_* keys of the MLPerf log."""

    org: str = option("harness", unbounded="free text, logged as the submitter's name")
    """submission_org."""
    division: Division = Division.closed
    """submission_division: closed or open."""
    status: Status = Status.research
    """submission_status: onprem, cloud, preview or research."""
    platform: Optional[str] = option(None, unbounded="free text, logged as the system's name")
    """submission_platform; null: "<ranks>x<device name>", e.g. "1xNVIDIA H200"."""


_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"  # a run_id becomes a directory name under output_root/runs


@dataclass
class HarnessConfig:
    model: Any = option(MISSING, unbounded="a config group: model=<name> picks one of the registered models")
    """The model: model=<name> picks reference_models/<name>/conf/model/<name>.yaml (options: --help model=<name>)."""
    dataset: Any = option(None, unbounded="a config group: dataset=<name> picks one of the model's datasets")
    """The dataset: dataset=<name> picks the model's conf/dataset/<name>.yaml; default: its embedded one."""
    seed: Optional[int] = option(None, ge=0, le=2**63 - 1)  # a 64-bit signed integer: broadcast to every rank
    """The run's master seed; null: drawn from the OS and recorded in the log and result.json."""
    gpus: int = option(1, ge=1)
    """Ranks per node: GPUs, or CPU processes with device=cpu."""
    nodes: int = option(1, ge=1)
    """Nodes of a multi-node run, each started with the same command."""
    rdzv_endpoint: Optional[str] = option(None, pattern=r"\S+:[0-9]+", like="HOST:PORT")
    """HOST:PORT of the c10d rendezvous, needed when nodes > 1."""
    run_id: Optional[str] = option(None, pattern=_NAME, like="a name of letters, digits, '.', '_' and '-'")
    """Names a multi-node run: the same on every node, a fresh one per run (its directory is
    <output_root>/runs/run-<run_id>_<model>)."""
    device: Device = Device.auto
    """auto, cpu or cuda."""
    precision: Optional[Precision] = None
    """fp32, tf32, amp (fp16 autocast with a gradient scaler) or bf16; tf32 and amp need CUDA. null: on CUDA
    the mixed precision the model's MLPerf reference trains in (amp for every model here), fp32 elsewhere."""
    master_weights: Optional[bool] = None
    """amp/bf16: the weights themselves in fp16/bf16, fp32 copies in the optimizer. null: on CUDA in
    mode=throughput the model's fast path's choice (ModelSpec.fast), false elsewhere."""
    fp8: bool = False
    """amp/bf16: the model's linear layers (both sizes multiples of 16) multiply in fp8 through torchao's
    Float8Linear: e4m3 inputs and weights, e5m2 gradients, each tensor scaled by its own max (MLPerf's
    H100/H200 submissions run their matmuls so, through Transformer Engine). Needs torchao (the project's
    fp8 extra) and, on CUDA, fp8 Tensor Cores (compute capability 8.9 or later: L4, L40S, H100, H200);
    on a CPU torchao emulates it, for checking numerics only (harness/interface/fp8.py)."""
    ddp_bucket_mb: float = option(25.0, gt=0)
    """DistributedDataParallel's gradient bucket size on several ranks; above the model's gradient size,
    one all-reduce after backward instead of several overlapping it."""
    mode: Mode = Mode.train
    """train: to the quality target or the epoch cap; throughput: the model on synthetic batches, no data."""
    max_epochs: int = option("${model.max_epochs}", ge=1)
    """The epoch cap; default: the model's max_epochs."""
    eval_every: int = option("${model.eval_every}", ge=1)
    """Epochs between evaluations; default: the model's eval_every (its schedule: model.eval_*)."""
    warmup_steps: Optional[int] = option(None, ge=0)
    """Training steps left out of the throughput figure; null: 20 in mode=train, 1 in mode=throughput
    (whose timed warm-up, warmup_s, follows it)."""
    throughput_steps: Optional[int] = option(None, ge=1)
    """mode=throughput: a fixed count of counted steps per window; null: each window sized to
    throughput_window_s from the warm-up's measured step time."""
    throughput_repeats: int = option(5, ge=1)
    """mode=throughput: windows measured; result.json has each and their median."""
    warmup_s: Optional[float] = option(None, gt=0)
    """mode=throughput: warm up for at least this many seconds (after warmup_steps, one timed step at
    a time), and until the last three timed steps agree within 1.5x (at most 4x this plus 10 s); null:
    3 s where the windows are timed (throughput_steps null), none where throughput_steps counts them."""
    throughput_window_s: float = option(2.0, gt=0)
    """mode=throughput: each window's aimed length, its step count taken from the warm-up's measured
    step time, so a measurement ends in seconds at any batch (not used when throughput_steps is set).
    `python -m harness.bench` sets it and warmup_s, so a cell and a direct call given the same seconds
    measure windows of the same length."""
    eager: bool = False
    """CUDA: the plain eager step, as DeepLearningExamples' and Lambda's tables measure it: none of the
    model's fast path (torch.compile, CUDA-graph capture; its ModelSpec's `fast`), which is otherwise the
    default on CUDA (harness/fastpath.py)."""
    cuda_graph: Optional[bool] = None
    """One GPU: capture the step's forward and backward once in a CUDA graph and replay it (the optimizer
    runs eagerly after it): for models bound by launching small kernels, or whose host work slows their
    input pipeline (harness/run/graph.py). mode=throughput replays its one batch; mode=train copies each
    batch into the graph's inputs (a batch of another shape trains eagerly). null: the model's fast path
    decides (on CUDA, unless eager=true). A step that cannot be captured falls back to the eager step,
    and the run says why."""
    warm_up: Optional[bool] = None
    """mode=train: before run_start, step the forward and backward on the model's synthetic batches (one of
    each shape it lists, else its one synthetic batch), then put back its buffers, gradients and random
    generators, so that torch.compile's compilations of those shapes are model initialization, not time to
    train, as MLPerf's rules allow (harness/run/warmup.py). No training data is touched; the run trains as it
    would have without, loss for loss. null: on wherever the training step compiles (harness/fastpath.py)."""
    clear_caches: bool = False
    """Drop the OS page cache before the run (needs root), as MLPerf submissions must."""
    progress: bool = True
    """A live progress line with ETA on the console."""
    tensorboard: bool = True
    """RUN_DIR/tb: losses, quality, throughput, telemetry and hparams, written by rank 0 (tensorboard --logdir)."""
    telemetry: bool = True
    """GPUs through NVML (the process on CPU) into telemetry.jsonl, a summary in result.json."""
    telemetry_interval_s: float = option(1.0, gt=0)
    """Seconds between telemetry samples (telemetry=false turns it off)."""
    progress_timeout_s: float = option(300.0, gt=0)
    """A rank silent (stopped, wedged) or without a training step for this long ends the run with
    "rank N made no progress for S s" (one rank is watched too). Evaluation is judged on liveness alone, so
    a slow evaluation is safe at any value; so is torch.compile's compile (max-autotune's take minutes) for
    up to 4 times this (harness/run/watchdog.py)."""
    output_root: str = option("outputs", unbounded="a folder, checked before the run for being one this user "
                                                   "can write (harness.outputs.check_paths)")
    """Every file a run writes goes under here."""
    data_root: str = option("${output_root}/datasets", unbounded="a folder, checked before the run for not "
                                                                 "being a file (harness.outputs.check_paths)")
    """Where embedded datasets are generated; default: <output_root>/datasets."""
    mlperf: MLPerfFields = field(default_factory=MLPerfFields)
    """The submission_* keys of mlperf.log."""


ConfigStore.instance().store(name="harness_schema", node=HarnessConfig)
