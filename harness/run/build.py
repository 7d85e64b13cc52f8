"""One place builds a rank's run: device, model, optimizer, precision, the DDP wrapper and the batch feed.

Runs (harness/run/session.py), the measuring tools (scripts/tools/) and the tests all build through
`build_run`, so what a script measures or a test checks is what a run trains.

    python - <<'EOF'
    from harness.config import compose
    from harness.run.build import build_run, context_for
    cfg = compose(["model=ncf", "mode=throughput", "seed=1"])
    run = build_run(cfg, context_for(cfg))
    print(type(run.bench).__name__, run.precision.name)
    EOF

The model keeps its own module (`bench.model`): the harness trains `run.trained` (DDP's wrapper on
several ranks, else the module itself) and evaluates `run.module`, so no model unwraps anything.
"""
from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union, cast

import torch
from omegaconf import DictConfig

from harness import fastpath, registry
from harness.errors import ConfigError
from harness.interface import Benchmark, RunContext, ThroughputBenchmark
from harness.interface import fp8
from harness.interface.contract import sharded_by
from harness.run import compile_guard, distributed, seeding
from harness.run.distributed import SINGLE, World
from harness.run.feed import Feed
from harness.run.plan import RunPlan, plan_run, read_plan
from harness.run.precision import PrecisionPolicy, policy

log = logging.getLogger("harness.build")


@dataclass
class BuiltRun:
    """A rank's model, ready for the loop."""

    bench: ThroughputBenchmark
    precision: PrecisionPolicy
    ctx: RunContext
    trained: torch.nn.Module  # what the loop calls: DDP's wrapper on several ranks, else the module
    feed: Feed
    mode: str = "train"  # train | throughput
    _synthetic: Any = None
    train_graph: Any = None  # mode=train with cuda_graph=true: its graphed step, kept across epochs (run/graph.py)

    @property
    def module(self) -> torch.nn.Module:
        """The model itself: what an evaluation sees, whatever wraps it for training."""
        return self.bench.model

    @property
    def task(self) -> Benchmark:
        """The model as a time-to-train Benchmark (its batches and evaluation): build_run checked that a
        model with a task built one, so the type is narrowed here, once."""
        return cast(Benchmark, self.bench)

    @cached_property
    def params(self) -> list[torch.nn.Parameter]:
        """The optimizer's parameters: the model's own, or their fp32 copies with master_weights=true."""
        return [p for group in self.bench.optimizer.param_groups for p in group["params"] if p.requires_grad]

    def synthetic_batch(self) -> Any:
        """The model's synthetic batch on the device, made once per run (mode=throughput)."""
        if self._synthetic is None:
            self._synthetic = self.feed.once(self.bench.synthetic_batch())
        return self._synthetic


_TASK_METHODS = ("steps_per_epoch", "train_batches", "train_samples", "eval_samples", "evaluate")


# The GPU's hardware work queues a process's CUDA context gets (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set; 32
# at most), read when the context is made. With fewer queues than streams, streams share one and a kernel
# waits for every kernel queued before it on the other's: nvJPEG's colour conversions waited up to 27.7 ms
# behind ResNet-50's step this way, and a graphed step queues a whole step at once
# (docs/benchmarks/gpu_check_2026-12-06.md, its last section)
HARDWARE_QUEUES, QUEUES = "32", "CUDA_DEVICE_MAX_CONNECTIONS"


def hardware_queues(cfg: DictConfig) -> Optional[str]:
    """Before this process's CUDA context: a queue per stream where mode=train replays its step from a
    CUDA graph, unless the environment names its own number; the number in effect (None: CUDA's 8)."""
    graph = cfg.get("cuda_graph")
    if graph is None:  # a script's config, resolved after its device: what the fast path will choose
        graph = fastpath.graphed(cfg, registry.get(str(cfg.model.name)))
    if graph and str(cfg.mode) == "train":
        os.environ.setdefault(QUEUES, HARDWARE_QUEUES)
    return os.environ.get(QUEUES)


def pick_device(cfg: DictConfig, local_rank: int) -> torch.device:
    want = str(cfg.device)
    if want != "cpu":  # a run's ranks have it from the launcher; a script builds here, before its first CUDA call
        hardware_queues(cfg)
    if want == "cpu" or (want == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError("device=cuda but PyTorch sees no CUDA device; use device=cpu")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def device_sync(device: torch.device) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on a CPU): the meters' clock."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def clear_page_cache() -> bool:
    """Drop the OS page cache as MLPerf submissions must; True only if it really happened."""
    try:
        subprocess.run(["sync"], check=False, timeout=120)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as err:
        log.warning("clear_caches=true but the page cache could not be dropped (%s); logging cache_clear false", err)
        return False


def context_for(cfg: DictConfig, *, data_dir: Optional[Path] = None, world: World = SINGLE,
                device: Optional[torch.device] = None, master_seed: Optional[int] = None) -> RunContext:
    """The RunContext of one rank: its device and the seeds derived from the run's master seed."""
    device = device or pick_device(cfg, world.local_rank)
    master = int(cfg.seed if master_seed is None else master_seed)
    seeds = seeding.derive(master, world.rank, world.world_size)
    return RunContext(cfg=cfg, data_dir=data_dir, device=device, rank=world.rank, world_size=world.world_size,
                      seed=seeds.rank, shared_seed=seeds.shared)


def build_run(run: Union[RunPlan, DictConfig], ctx: RunContext, *, given: Iterable[str] = (),
              ddp: Optional[bool] = None, bucket_mb: Optional[float] = None, **ddp_options) -> BuiltRun:
    """Seed this rank, build the model and optimizer, apply the precision (with master_weights=true
    the weights in 16 bits and fp32 copies in the optimizer, which must come before DDP takes the
    parameters) and wrap the model in DDP: on several ranks, or as `ddp` says (a profiling script's
    world of one), unless the model sharded itself (its `sharded` attribute: FSDP); `bucket_mb` (default
    the config's ddp_bucket_mb) and `ddp_options` go to DDP. `run`: the run's plan, or a script's composed
    config, planned here for ctx's device (harness/run/plan.py) with `given`, the script's command-line
    overrides: on CUDA the model's fast path sets its options over every other one of the config's."""
    if isinstance(run, RunPlan):
        plan = run
    else:  # a script's config: resolved here unless its command did, then read-only as a run's
        spec = registry.get(str(run.model.name))
        # fastpath.resolve fills in all four; a command line that typed precision alone is not resolved yet
        resolved = all(run.get(key) is not None for key in ("precision", "seed", "cuda_graph", "master_weights"))
        plan = read_plan(run, spec) if resolved else plan_run(run, spec, ctx.device.type == "cuda", given)
    spec = plan.spec
    if ctx.device.type == "cuda" and "compile" in plan.path:
        compile_guard.install()  # a compilation that fails runs eagerly, and the run says so
    precision = policy(plan.precision, ctx.device)
    seeding.seed_everything(ctx.seed)
    bench = spec.build(ctx)
    missing = [m for m in _TASK_METHODS if spec.task is not None and not callable(getattr(bench, m, None))]
    if missing:
        raise TypeError(f"model={spec.name} has an MLPerf task, but what its build returned lacks the Benchmark "
                        f"methods {', '.join(missing)} (harness/interface/contract.py)")
    if plan.config.fp8 and not fp8.converted(bench.model):  # before master copies and DDP take the parameters
        if sharded_by(bench):
            raise ConfigError(f"fp8=true: model={spec.name} shards itself (FSDP) without converting its layers "
                              "first (RunContext.convert_layers); leave fp8 out, or run it on one GPU")
        ctx.convert_layers(bench.model)
    if plan.config.master_weights and not sharded_by(bench):
        precision.keep_master_weights(bench.model, bench.optimizer)
    trained = bench.model
    if sharded_by(bench):  # FSDP's shards, made by the model before its optimizer: nothing to wrap
        if plan.config.master_weights:
            raise ConfigError(f"master_weights=true: model={spec.name} shards itself (FSDP), whose shards the "
                              "optimizer holds; use the model's own mixed precision option instead")
    elif ctx.world_size > 1 if ddp is None else ddp:
        trained = distributed.wrap_ddp(bench.model, float(bucket_mb or plan.config.ddp_bucket_mb), **ddp_options)
    return BuiltRun(bench, precision, ctx, trained, Feed(ctx.device), str(plan.config.mode))
