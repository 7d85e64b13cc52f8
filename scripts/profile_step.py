"""Where a training step's time goes: torch.profiler over the harness's own step, on synthetic batches.

    python scripts/profile_step.py model=gnmt dataset=wmt16 precision=amp
    python scripts/profile_step.py model=ncf dataset=ml20m precision=amp --steps 30 --rows 25

Builds the model exactly as a run does (the same config, the same Benchmark and loop code), runs
warm-up steps, then profiles --steps steps and prints the operators and kernels that take the most
device (or, on a CPU, host) time, with the step time and throughput over the profiled window.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness import registry, seeding  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.interface import RunContext  # noqa: E402
from harness.loop import train_epoch  # noqa: E402
from harness.meter import ThroughputMeter  # noqa: E402
from harness.precision import policy  # noqa: E402
from harness.progress import Progress  # noqa: E402
from harness.worker import pick_device  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rows", type=int, default=20)
    args = parser.parse_args()

    cfg = compose([*args.overrides, "mode=throughput", "seed=1"])
    OmegaConf.resolve(cfg)
    spec = registry.get(cfg.model.name)
    device = pick_device(cfg, 0)
    seeding.seed_everything(1)
    bench = spec.build(RunContext(cfg=cfg, data_dir=None, synthetic=True, device=device, rank=0, world_size=1,
                                  seed=1, shared_seed=2))
    precision = policy(cfg.precision, device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    quiet = Progress(enabled=False, max_epochs=1, unit=spec.sample_unit)
    train_epoch(bench, 0, precision, ThroughputMeter(0, sync), quiet, max_steps=args.warmup)

    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    meter = ThroughputMeter(0, sync)
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=activities) as prof:
        train_epoch(bench, 1, precision, meter, quiet, max_steps=args.steps)
    elapsed = time.perf_counter() - t0
    params = sum(p.numel() for p in bench.model.parameters())
    print(f"{spec.name}, {params:,} parameters, {cfg.precision}, batch {cfg.model.batch_size}, {device}: "
          f"{elapsed / args.steps * 1e3:.2f} ms/step under the profiler, "
          f"{meter.throughput() or 0:,.0f} {spec.sample_unit}/s")
    key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=args.rows, max_name_column_width=70))
    return 0


if __name__ == "__main__":
    sys.exit(main())
