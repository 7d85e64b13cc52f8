"""ResNet's input pipeline against its training step: is training on JPEG files as fast as on
synthetic batches, and if not, what holds it back?

    python -m reference_models.resnet.generate /tmp/inet500 --classes 20 --width 500 --height 375 \
        --size-jitter 0 --train-per-class 500 --val-per-class 5
    python scripts/lab/resnet_pipeline.py model=resnet dataset=imagenet dataset.path=/tmp/inet500 \
        model.num_classes=1000 precision=amp model.channels_last=true model.batch_size=256 model.workers=15

The run is built through harness.run.build exactly as `python -m harness.train` builds it (the same
options; the dataset's training images are read through the model's DataLoader), then three phases
of --steps timed steps each after --warmup. Timed windows stay inside epochs: the first --skip steps
of each epoch, when the workers refill after the epoch's start, are left out and the wait for its
first batch is reported apart (a few thousand images make an epoch of a few dozen steps; ImageNet's
has 5,005 at batch 256, where that wait is lost in the noise):
- loader: batches alone, decoded, cropped, on the device and normalized (with model.decode=cuda
  the GPU decodes them): what the input pipeline can deliver;
- real: training steps on those batches, as a run trains;
- synthetic: the same training step on one batch held on the device: what the GPU can do.
It prints images/s for each, real / synthetic, and names the bottleneck (the loader, when it
alone delivers less than the synthetic step consumes), plus one JSON line (--json: to a file too).
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from omegaconf import OmegaConf  # noqa: E402

from harness import registry  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.observe.meter import ThroughputMeter  # noqa: E402
from harness.run.build import build_run, context_for, device_sync  # noqa: E402
from harness.run.loop import EpochTraining  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="+", help="harness options, as for python -m harness.train")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps before each phase")
    parser.add_argument("--steps", type=int, default=100, help="timed steps of each phase")
    parser.add_argument("--skip", type=int, default=3, help="untimed steps at the start of each epoch")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    cfg = compose(["mode=train", "seed=1", *args.overrides])
    OmegaConf.resolve(cfg)
    spec = registry.get(str(cfg.model.name))
    run = build_run(cfg, context_for(cfg, data_dir=spec.task.prepare(cfg)))
    bench, sync = run.bench, device_sync(run.ctx.device)
    batch = int(cfg.model.batch_size)
    epochs = itertools.count(1)

    def train(batches) -> None:  # the loop's own training step and batch feed over these batches, as a run trains
        training = EpochTraining(run, 1, run.feed.batches(batches), ThroughputMeter(0, lambda: None), None, 0)
        training.train()
        training.close()

    def load(batches) -> None:
        for _ in batches:
            pass

    def measure(work) -> tuple[float, float]:
        """(images/s over --steps steps, mean seconds each epoch waits for its first batch). Windows
        stay inside epochs: an epoch's start (workers refilling) is timed apart, once per epoch,
        which is 5,005 steps on ImageNet at batch 256 but a few dozen here."""
        timed, seconds, stalls = 0, 0.0, []
        while timed < args.steps:
            batches = iter(bench.train_batches(next(epochs)))
            sync()
            start = time.perf_counter()
            first = next(batches, None)
            stalls.append(time.perf_counter() - start)
            work(itertools.chain([first], itertools.islice(batches, args.skip - 1)))
            sync()
            start = time.perf_counter()
            n = len(list(_counted(work, itertools.islice(batches, args.steps - timed))))
            sync()
            seconds += time.perf_counter() - start
            timed += n
        return timed * batch / seconds, sum(stalls) / len(stalls)

    for phase in (load, train):  # warm-up: workers started, kernels chosen, the network compiled
        phase(itertools.islice(bench.train_batches(next(epochs)), args.warmup))
    rates, stalls = {}, {}
    rates["loader"], stalls["loader"] = measure(load)
    rates["real"], stalls["real"] = measure(train)
    held = run.feed.once(next(iter(bench.train_batches(next(epochs)))))  # on the device once: no copy per step
    train(itertools.repeat(held, args.warmup))
    sync()
    start = time.perf_counter()
    train(itertools.repeat(held, args.steps))
    sync()
    rates["synthetic"] = args.steps * batch / (time.perf_counter() - start)

    ratio = rates["real"] / rates["synthetic"]
    if ratio >= 0.85:
        verdict = "real data within 15% of synthetic"
    elif rates["loader"] < rates["synthetic"]:
        verdict = (f"input-bound: the loader alone delivers {rates['loader']:,.0f} images/s "
                   f"({cfg.model.workers} workers, decode={cfg.model.decode}) of the {rates['synthetic']:,.0f} "
                   "the step consumes")
    else:
        verdict = "the loader keeps up alone but not beside training: CPU or PCIe contention"
    for name, rate in rates.items():
        print(f"{name:>9}: {rate:,.0f} images/s")
    print(f"each epoch waits {stalls['real']:.2f} s for its first batch ({stalls['loader']:.2f} s loading alone)")
    print(f"real / synthetic = {ratio:.3f}: {verdict}")
    result = {"script": "resnet_pipeline", "overrides": args.overrides, "batch": batch, **rates,
              "epoch_start_s": stalls, "real_over_synthetic": ratio, "verdict": verdict}
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result) + "\n")


def _counted(work, batches):
    """Runs `work` over `batches`, yielding once per batch it took (so the caller can count them)."""
    seen = []

    def tap():
        for b in batches:
            seen.append(None)
            yield b

    work(tap())
    return seen


if __name__ == "__main__":
    main()
