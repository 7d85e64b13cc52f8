"""A suite model's own modules and batches in a bare PyTorch loop: what `harness.train` would measure
without its loop, meter, progress, telemetry and logs. Set beside the harness's figure for the same
model and settings, the gap is the harness's cost.

    python scripts/tools/plain_loop.py model=txl_large precision=amp
    python scripts/tools/plain_loop.py model=tacotron2 precision=amp --warmup 3 --steps 6
    python scripts/tools/plain_loop.py model=bert_base +debug=bert_base device=cpu --warmup 1 --steps 2   # tiny, CPU

The model, optimizer, precision and batches come from harness.run.build.build_run, as a run builds
them (one rank, no DDP); each step is autocast forward, (scaled) backward, gradient clipping when the
model asks for it, optimizer step and zero_grad. Prints one JSON line: the model's unit per second as
the median of --repeats windows of --steps steps after --warmup steps, each window closed by a
device synchronisation.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness import registry  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.interface import LossTerms  # noqa: E402
from harness.run.build import build_run, context_for  # noqa: E402
from harness.usage import module_doc  # noqa: E402
from timing import add_window_arguments, timed_windows  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    p.add_argument("overrides", nargs="*", help="harness config overrides: model=..., precision=..., model.*=...")
    add_window_arguments(p, warmup=10, steps=20, repeats=3)
    args = p.parse_args()

    cfg = compose([*args.overrides, "mode=throughput", "seed=1"])
    OmegaConf.resolve(cfg)
    spec = registry.get(str(cfg.model.name))
    # planned as harness.train plans it: the model's fast path, unless an override says otherwise
    run = build_run(cfg, context_for(cfg), given=args.overrides)
    bench, precision = run.bench, run.precision
    scaler, opt = precision.scaler, bench.optimizer
    batch = run.synthetic_batch()  # on the device once, as mode=throughput feeds it

    def step() -> int:
        with precision.autocast():
            out, samples = bench.loss(run.trained, batch)
        loss = out.total if isinstance(out, LossTerms) else out
        (scaler.scale(loss) if scaler else loss).backward()
        if bench.grad_clip_norm is not None:
            if scaler:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(bench.model.parameters(), bench.grad_clip_norm)
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        return samples

    rates = timed_windows(step, run.ctx.device, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
    print(json.dumps({"script": "plain_loop", "model": spec.name, "precision": str(cfg.precision),
                      "device": str(run.ctx.device), "batch_size": int(cfg.model.batch_size),
                      "unit": f"{spec.sample_unit}/s", "throughput": statistics.median(rates), "windows": rates,
                      "overrides": args.overrides, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
