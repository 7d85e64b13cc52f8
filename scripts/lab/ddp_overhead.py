"""What DistributedDataParallel and its gradient exchange add to a step, variant by variant, side by side.

    python scripts/lab/ddp_overhead.py model=gnmt dataset=wmt16 precision=amp master_weights=true \
        model.batch_size=2048 model.compile_attention=true
    torchrun --standalone --nproc_per_node=2 scripts/lab/ddp_overhead.py model=gnmt dataset=wmt16 \
        precision=amp master_weights=true model.batch_size=2048 --out ddp.json
    python scripts/lab/ddp_overhead.py model=ncf device=cpu --variants plain ddp ddp-noop --steps 5

Every variant is a fresh model built as a run builds it (the same config, Benchmark and loop code;
synthetic batches, as mode=throughput), stepped through harness.run.loop.train_epoch. The variants take
turns window by window, so a drift of the machine (clocks, heat) is spread over all of them:

  plain       no DDP: each rank steps on its own (on 2 GPUs: two independent runs side by side)
  ddp         DDP exactly as a run wraps the model (harness.run.distributed.wrap_ddp)
  ddp-noop    the same DDP with a comm hook that exchanges nothing (DDP's bookkeeping alone:
              hooks, the copy of each gradient into its bucket, the bucket rebuild)
  ddp-static  DDP with static_graph=True
  ddp-1bucket DDP with one bucket for every gradient (one all-reduce after backward)
  ddp:MB      DDP with buckets of MB megabytes (ddp_bucket_mb=MB)

A window's time is the slowest rank's. Run alone, the script makes a world of one rank in its own
process, so DDP's own cost can be measured on a single GPU. The table gives the median
ms/step, the spread over windows and each variant's cost over `plain`, and from each step's own
duration (CUDA events; the clock on a CPU) its spread and the lockstep cost: the mean over steps
of the slowest rank's step less the ranks' mean step. For `plain`, whose ranks never wait for each
other, that estimates what waiting for the slower rank at every exchange costs when the ranks'
step times vary independently (for two ranks whose steps vary normally and independently with
deviation s, it is s/sqrt(pi) ~ 0.56 s). Under DDP the exchange already holds the ranks together,
so there it shows only what is left of the spread.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness import registry  # noqa: E402
from harness.run import distributed  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.run.loop import train_epoch  # noqa: E402
from harness.observe.meter import ThroughputMeter  # noqa: E402
from harness.run.build import BuiltRun, build_run, context_for, device_sync, pick_device  # noqa: E402
from harness.run.distributed import World  # noqa: E402

VARIANTS = ("plain", "ddp", "ddp-noop", "ddp-static", "ddp-1bucket")


class StepClock(ThroughputMeter):
    """A ThroughputMeter that also marks the end of every step on the device's own timeline."""

    def __init__(self, sync, device: torch.device):
        super().__init__(0, sync)
        self.cuda = device.type == "cuda"
        self.marks: list = []

    def _mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()  # no sync: read once the window has finished
            return event
        return time.perf_counter()  # a CPU step has finished when its Python call returns

    def begin_epoch(self) -> None:
        super().begin_epoch()
        self.marks = [self._mark()]

    def step(self, samples: int) -> None:
        super().step(samples)
        self.marks.append(self._mark())

    def step_ms(self) -> list[float]:
        """Each step's duration; call after the window's closing sync."""
        if self.cuda:
            return [a.elapsed_time(b) for a, b in zip(self.marks, self.marks[1:])]
        return [(b - a) * 1e3 for a, b in zip(self.marks, self.marks[1:])]


def lockstep_cost(per_rank: list[list[float]]) -> float:
    """Mean over steps of (slowest rank's step - the ranks' mean step), in the steps' unit."""
    steps = list(zip(*per_rank))
    return statistics.fmean(max(s) - statistics.fmean(s) for s in steps) if steps else 0.0


def _variant(name: str) -> str:
    if name in VARIANTS or (name.startswith("ddp:") and name[4:].replace(".", "", 1).isdigit()):
        return name
    raise argparse.ArgumentTypeError(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}, or ddp:MB")


def build(cfg, spec, device: torch.device, rank: int, world: int, variant: str) -> BuiltRun:
    bucket_mb = 1e6 if variant == "ddp-1bucket" else cfg.ddp_bucket_mb
    if variant.startswith("ddp:"):
        bucket_mb = float(variant.split(":", 1)[1])
    where = World(rank, int(os.environ.get("LOCAL_RANK", 0)), world, world, 0, 1, "torchrun")
    run = build_run(cfg, context_for(cfg, world=where, device=device), ddp=variant != "plain", bucket_mb=bucket_mb,
                    static_graph=variant == "ddp-static")
    if variant == "ddp-noop":
        run.trained.register_comm_hook(None, noop_hook)  # hands each bucket back unexchanged
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), type=_variant,
                        help=f"of {', '.join(VARIANTS)}, ddp:MB")
    parser.add_argument("--warmup", type=int, default=10, help="uncounted steps per variant")
    parser.add_argument("--steps", type=int, default=20, help="steps per window")
    parser.add_argument("--repeats", type=int, default=5, help="windows per variant")
    parser.add_argument("--out", help="write the figures here as JSON (rank 0)")
    args = parser.parse_args()

    cfg = compose([*args.overrides, "mode=throughput", "seed=1"])
    OmegaConf.resolve(cfg)
    spec = registry.get(cfg.model.name)
    under_torchrun = "RANK" in os.environ
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = pick_device(cfg, int(os.environ.get("LOCAL_RANK", 0)))
    backend = distributed.backend_for(device)
    if under_torchrun:
        dist.init_process_group(backend)
    else:  # a world of one in this process, so that DDP can wrap the model on a single device
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    sync = device_sync(device)

    built = {}
    for variant in args.variants:
        run = build(cfg, spec, device, rank, world, variant)
        train_epoch(run, 0, ThroughputMeter(0, sync), max_steps=args.warmup)
        built[variant] = run
    samples_per_step = None
    times: dict[str, list[float]] = {v: [] for v in args.variants}
    step_ms: dict[str, list[float]] = {v: [] for v in args.variants}  # this rank's, window after window
    for _ in range(args.repeats):
        for variant, run in built.items():
            dist.barrier()  # every rank starts the window together
            meter = StepClock(sync, device)
            # the meter's window runs from a sync before the first step to one after the last
            train_epoch(run, 1, meter, max_steps=args.steps)
            step_ms[variant].extend(meter.step_ms())
            took = torch.tensor([meter.epoch_seconds], dtype=torch.float64, device=device)
            dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the window lasts as long as its slowest rank
            times[variant].append(took.item() / args.steps * 1e3)
            samples_per_step = meter.samples / max(meter.steps, 1)

    every_rank: list[dict[str, list[float]]] = [{} for _ in range(world)]
    dist.all_gather_object(every_rank, step_ms)
    rows = []
    base = statistics.median(times["plain"]) if "plain" in times else None
    for variant, ms in times.items():
        med = statistics.median(ms)
        per_rank = [r[variant] for r in every_rank]
        rows.append({"variant": variant, "ms_per_step": med, "min": min(ms), "max": max(ms),
                     "over_plain_ms": None if base is None else med - base,
                     "throughput_all_ranks": samples_per_step * world / med * 1e3,
                     "step_stdev_ms": statistics.fmean(statistics.pstdev(r) for r in per_rank),
                     "lockstep_cost_ms": lockstep_cost(per_rank)})
    if rank == 0:
        gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
        print(f"{spec.name}, {world} rank(s) on {gpu}, torch {torch.__version__}, "
              f"{datetime.date.today()}, {args.repeats} windows of {args.steps} steps, overrides: "
              f"{' '.join(args.overrides)}")
        print(f"| variant | ms/step (median) | min-max | over plain | {spec.sample_unit}/s, all ranks "
              "| step stdev | lockstep cost |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            over = "" if r["over_plain_ms"] is None else f"{r['over_plain_ms']:+.2f} ms"
            print(f"| {r['variant']} | {r['ms_per_step']:.2f} | {r['min']:.2f}-{r['max']:.2f} | {over} | "
                  f"{r['throughput_all_ranks']:,.0f} | {r['step_stdev_ms']:.2f} ms | {r['lockstep_cost_ms']:.2f} ms |")
        if args.out:
            Path(args.out).write_text(json.dumps({
                "model": spec.name, "world_size": world, "device": gpu, "torch": torch.__version__,
                "overrides": args.overrides, "steps": args.steps, "repeats": args.repeats,
                "date": str(datetime.date.today()), "rows": rows, "windows_ms": times,
                "step_ms_per_rank": every_rank}, indent=1) + "\n")
    # sync point: the ranks tear gloo down together; a rank destroying its group while the other's
    # sockets are already closed can abort (SIGABRT) in gloo's teardown
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
