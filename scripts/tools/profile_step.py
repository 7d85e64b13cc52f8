"""Where a training step's time goes: torch.profiler over the harness's own step, on synthetic batches.

    python scripts/tools/profile_step.py model=gnmt dataset=wmt16 precision=amp
    python scripts/tools/profile_step.py model=ncf dataset=ml20m precision=amp --steps 30 --rows 25
    python scripts/tools/profile_step.py model=maskrcnn dataset=maskrcnn_coco2017 model.batch_size=8 --by host
    torchrun --standalone --nproc_per_node=2 scripts/tools/profile_step.py model=gnmt dataset=wmt16 \
        precision=amp master_weights=true model.batch_size=1024 --trace-dir traces

Builds the model exactly as a run does (the same config, the same Benchmark and loop code), runs
warm-up steps, then profiles --steps steps and prints the operators and kernels that take the most
device (or, on a CPU, host) time, with the step time and throughput over the profiled window, and on a
GPU how much of the step the GPU was busy (trace_busy.py: the rest it waited on the host).
Under torchrun each rank wraps the model in DistributedDataParallel as a run does (NCCL on GPUs,
gloo on CPUs) and prints its own table, so the ranks' times in the gradient exchange and their
waits can be set side by side; --trace-dir writes one Chrome trace per rank (chrome://tracing,
Perfetto).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(Path(__file__).resolve().parent)]  # the repository, and trace_busy beside this

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness import registry  # noqa: E402
from harness.run import distributed  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.run.loop import train_epoch  # noqa: E402
from harness.observe.meter import ThroughputMeter  # noqa: E402
from harness.run.build import build_run, context_for, device_sync, pick_device  # noqa: E402
from harness.run.distributed import World  # noqa: E402
from harness.run.plan import plan_run  # noqa: E402
from harness.usage import module_doc  # noqa: E402
import trace_busy  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--trace-dir", help="write each rank's Chrome trace here")
    parser.add_argument("--by", choices=["device", "host"], default="device",
                        help="sort by the GPU's time (default on a GPU) or the host's: a step whose time under the "
                        "profiler is well over the GPU's busy time is held by the host, and --by host says where")
    args = parser.parse_args()

    cfg = compose([*args.overrides, "mode=throughput", "seed=1"])
    OmegaConf.resolve(cfg)
    spec = registry.get(cfg.model.name)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = pick_device(cfg, int(os.environ.get("LOCAL_RANK", 0)))
    if world > 1:
        torch.distributed.init_process_group(distributed.backend_for(device))
    where = World(rank, int(os.environ.get("LOCAL_RANK", 0)), world, world, 0, 1, "torchrun")
    # planned as `python -m harness.train ... mode=throughput` plans it: the model's fast path unless an
    # override says otherwise, so the profile is of the step a run takes
    plan = plan_run(cfg, spec, device.type == "cuda", given=args.overrides)
    run = build_run(plan, context_for(plan.cfg, world=where, device=device))
    bench = run.bench
    sync = device_sync(device)
    train_epoch(run, 0, ThroughputMeter(0, sync), max_steps=args.warmup)

    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    meter = ThroughputMeter(0, sync)
    with torch.profiler.profile(activities=activities) as prof:
        # the steps alone: the profiler's start (CUPTI's buffers) and its processing of the events at exit are not
        # the step's, and together took 0.9 s of 8 Mask R-CNN steps on an H100
        t0 = time.perf_counter()
        train_epoch(run, 1, meter, max_steps=args.steps)
        sync()  # sync point: the steps' queued work done
        elapsed = time.perf_counter() - t0
    params = sum(p.numel() for p in bench.model.parameters())
    key = "self_cuda_time_total" if device.type == "cuda" and args.by == "device" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=args.rows, max_name_column_width=70)
    busy_line = ""
    if args.trace_dir or device.type == "cuda":
        # on a GPU the trace also says how much of the step the GPU was busy (trace_busy.py): the table's kernel
        # times alone do not show the gaps between them
        folder = Path(args.trace_dir) if args.trace_dir else Path(tempfile.mkdtemp(prefix="profile_step_"))
        folder.mkdir(parents=True, exist_ok=True)
        trace = folder / f"{spec.name}_rank{rank}.json"
        prof.export_chrome_trace(str(trace))
        if device.type == "cuda":
            try:
                busy_line = "\n" + trace_busy.read(trace).line(args.steps)
            except ValueError as err:  # the table above still stands
                busy_line = f"\nGPU busy: not read ({err})"
        if not args.trace_dir:
            shutil.rmtree(folder, ignore_errors=True)
    for r in range(world):  # one rank at a time, so that the tables do not interleave
        if r == rank:
            print(f"[rank {rank}/{world}] {spec.name}, {params:,} parameters, {plan.label}, "
                  f"batch {cfg.model.batch_size} per rank, "
                  f"{device}: {elapsed / args.steps * 1e3:.2f} ms/step under the profiler, "
                  f"{meter.throughput() or 0:,.0f} {spec.sample_unit}/s on this rank\n{table}{busy_line}", flush=True)
        if world > 1:
            torch.distributed.barrier()
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
