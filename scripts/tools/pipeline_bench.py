"""A model's input pipeline against its training step: is training on its files as fast as on batches
already on the device, and if not, what holds it back? For every model with a real data path.

    python scripts/tools/pipeline_bench.py model=resnet dataset=imagenet dataset.path=/tmp/inet500 \
        model.num_classes=1000 precision=amp model.channels_last=true model.compile=true \
        model.batch_size=256 model.workers=15 model.decode=nvimgcodec --label "resnet nvimgcodec" \
        --target 0.95 --json /tmp/pipeline.jsonl --table /tmp/pipeline.md
    python scripts/tools/pipeline_bench.py model=gnmt dataset=gnmt_embedded model.hidden_size=1024 \
        model.batch_size=512 precision=amp --target 0.97
    scripts/lab/pipeline_h200.sh "$OUT"     # every model on one H200, side by side (the issue's table)

The run is built through harness.run.build exactly as `python -m harness.train` builds it (the same
options; the model's own training batches, read from its files), then three phases of --steps timed
steps each after --warmup, counted in the model's unit (images, tokens, samples: what `loss` returns):
- loader: the training batches alone, on the device and ready for the step (decoded and cropped on
  the GPU where model.decode says so): what the input pipeline can deliver;
- real: training steps on those batches, as a run trains; the time the step waits for the next batch
  (the harness's data wait: on a GPU, its idle time for the batch) is summed over the window;
- synthetic: the same training steps on the very batches of the real window, held on the device and
  replayed in order (--hold N: N batches of a fresh epoch, cycled, where memory is short): the same
  shapes and work, no input work: what the GPU can do at these settings.
Timed windows stay inside epochs: the first --skip steps of each epoch, while the workers refill (and
NCF draws its negatives), are left out and the wait for an epoch's first batch is reported apart.
Where batch shapes vary (Transformer and GNMT lengths, Mask R-CNN image sizes), a shape met for the
first time costs the step host time (cuDNN builds a plan for it, the allocator a block) that the
replay no longer pays: --warm-pass trains over the real window's epochs once first, its rate reported
apart as the first pass (what a run pays once per shape), so that real and synthetic both meet known shapes.
It prints each rate, real / synthetic against --target and names the bottleneck:
- the loader, when it alone delivers less than the synthetic step consumes (input-bound);
- beside training, when the loader keeps up alone but the step waits for batches beside training (the
  host's cores shared by the workers, the decode thread and the training process, or the decode's GPU
  work queued behind the step's: the profile's timeline tells them apart);
- the GPU, when the step waits little yet runs slower than on held batches (the input pipeline's
  kernels or copies share the GPU with the step).
One JSON line goes to stdout (and --json, appended) and one Markdown row to --table (appended, the
header written first when the file is new; pipeline_output.py beside this file writes them). With the GPU decode path it also reports the DataLoader's
rate alone and what the decode thread spent per batch. --profile N, where the target is missed, writes
torch.profiler's table of N real steps to --profile-out (and their timeline beside it, .trace.json); --build-only reports what model.decode=auto chose.
"""
from __future__ import annotations

import argparse
import faulthandler
import itertools
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, cast

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(Path(__file__).resolve().parent)]  # the repository, and pipeline_output beside this

from omegaconf import OmegaConf  # noqa: E402

from harness import registry  # noqa: E402
from harness.config import compose  # noqa: E402
from harness.errors import ConfigError  # noqa: E402
from harness.interface import Benchmark, DataError  # noqa: E402
from harness.observe.datawait import DataWait  # noqa: E402
from harness.observe.hooks import Hooks  # noqa: E402
from harness.observe.meter import ThroughputMeter  # noqa: E402
from harness.run.build import build_run, context_for, device_sync  # noqa: E402
from harness.run.loop import EpochTraining  # noqa: E402
from harness.usage import module_doc  # noqa: E402

import pipeline_output as output  # noqa: E402

def samples_of(batch: Any) -> int:
    """What a batch holds in the model's unit, without reading the device: a token count where the
    batch carries one (GNMT, Transformer), its `samples` where it counts them itself (Mask R-CNN's
    PackedBatch), else the length of its first part (images, pairs)."""
    if hasattr(batch, "tokens"):
        return int(batch.tokens)
    if hasattr(batch, "samples"):
        return int(batch.samples)
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    return len(first) if isinstance(first, (list, tuple)) else int(first.shape[0])


class _Epochs:
    """Epoch numbers, 1, 2, ...; rewound, the same numbers again (an epoch's number fixes its order)."""

    def __init__(self) -> None:
        self._next = 1

    def __next__(self) -> int:
        self._next += 1
        return self._next - 1

    def peek(self) -> int:
        return self._next

    def rewind(self, to: int) -> None:
        self._next = to


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("overrides", nargs="+", help="harness options, as for python -m harness.train")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps before each phase")
    parser.add_argument("--steps", type=int, default=100, help="timed steps of each phase")
    parser.add_argument("--skip", type=int, default=3, help="untimed steps at the start of each epoch")
    parser.add_argument("--hold", type=int, default=0, help="replay this many batches of a fresh epoch as the "
                        "synthetic step (0: the real window's own batches, held on the device)")
    parser.add_argument("--warm-pass", action="store_true", help="train once, untimed, over the epochs the real "
                        "window then times (the same batches: shapes that vary by batch have met cuDNN's plans and "
                        "the allocator once, as in a long run)")
    parser.add_argument("--target", type=float, default=0.85, help="real / synthetic that counts as keeping up")
    parser.add_argument("--label", default=None, help="the model column of the table (default: model=...)")
    parser.add_argument("--json", default=None, help="append the result as one JSON line")
    parser.add_argument("--table", default=None, help="append the result as one Markdown row")
    parser.add_argument("--build-only", action="store_true", help="build the run, report the decode backend "
                        "it chose (model.decode=auto: the probe's choice) and stop")
    parser.add_argument("--profile", type=int, default=0, help="where real / synthetic misses --target: profile "
                        "this many real steps (torch.profiler's table of CPU ops and CUDA kernels)")
    parser.add_argument("--profile-out", default="pipeline_profile.txt")
    args = parser.parse_args(argv)

    notes: list[str] = []  # what the decode module says at build (model.decode=auto: the probe and its choice)
    handler = logging.Handler()
    handler.emit = lambda record: notes.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("harness.decode").addHandler(handler)
    logging.getLogger("harness.decode").setLevel(logging.INFO)
    cfg = compose(["mode=train", "seed=1", *args.overrides])
    OmegaConf.resolve(cfg)
    spec = registry.get(str(cfg.model.name))
    assert spec.task is not None, f"model={spec.name} reads no data: nothing to measure"
    t_build = time.perf_counter()
    # planned as `python -m harness.train` plans it: the model's fast path for mode=train, unless an override
    # says otherwise (model.fixed_mask_rois=false measures the path without it, not the fast path's)
    run = build_run(cfg, context_for(cfg, data_dir=spec.task.prepare(cfg)), given=args.overrides)
    bench, sync = cast(Benchmark, run.bench), device_sync(run.ctx.device)  # a model with a task (asserted above) trains
    for note in notes:
        print(note)
    if args.build_only:
        seconds, decode = time.perf_counter() - t_build, str(getattr(bench, "decode", "-"))
        print(f"loaders closed in {close_loaders(bench):.2f} s")
        return output.record_build(args, spec.name, decode, seconds, notes)
    pipeline = getattr(getattr(bench, "_device_batches", None), "pipeline", None)  # the GPU decode path
    epochs = _Epochs()
    trained = [0]

    def train(batches: Iterable[Any], waited: list[float] | None = None) -> None:
        """The loop's own training step, batch feed and data wait (added to `waited`), as a run trains."""
        timer = DataWait(warmup_steps=0)
        hooks = Hooks([ThroughputMeter(0, lambda: None), timer])
        training = EpochTraining(run, 1, run.feed.batches(iter(batches)), hooks, None, 0)
        training.train()
        _, stats = training.close()
        trained[0] += training.samples
        if waited is not None:
            waited[0] += stats.data_wait_s or 0.0

    def load(batches: Iterable[Any], waited: list[float] | None = None) -> None:
        for batch in batches:
            trained[0] += samples_of(batch)

    def measure(work: Callable[[Iterable[Any], list[float] | None], None], waited: list[float] | None,
                keep: list[Any] | None = None
                ) -> tuple[float, float, float]:
        """(unit/s over --steps steps, mean seconds each epoch waits for its first batch, seconds timed);
        the timed batches are appended to `keep` when given."""
        steps, seconds, counted, stalls = 0, 0.0, 0, []
        while steps < args.steps:
            batches = iter(bench.train_batches(next(epochs)))
            sync()
            start = time.perf_counter()
            first = next(batches, None)
            stalls.append(time.perf_counter() - start)
            if first is None:
                raise SystemExit("an epoch yielded no batch: the dataset is smaller than one global batch")
            work(itertools.chain([first], itertools.islice(batches, args.skip - 1)), None)
            sync()
            trained[0], n = 0, [0]

            def counted_batches(source: Iterable[Any] = itertools.islice(batches, args.steps - steps),
                                n: list[int] = n) -> Iterator[Any]:
                for b in source:
                    n[0] += 1
                    if keep is not None:
                        keep.append(b)
                    yield b

            start = time.perf_counter()
            work(counted_batches(), waited)
            sync()
            seconds += time.perf_counter() - start
            counted += trained[0]
            steps += n[0]
            if n[0] == 0:
                raise SystemExit(f"an epoch has no more than --skip={args.skip} steps: use a larger dataset")
            close = getattr(batches, "close", None)
            if close is not None:
                close()  # the epoch's loader (and a decode thread) ends here, not at garbage collection
        return counted / seconds, sum(stalls) / len(stalls), seconds

    for phase in (load, train):  # warm-up: workers started, kernels chosen, the network compiled
        phase(itertools.islice(bench.train_batches(next(epochs)), args.warmup))
    rates: dict[str, float] = {}
    stalls: dict[str, float] = {}
    real_wait = [0.0]
    rates["loader"], stalls["loader"], _ = measure(load, None)
    workers = _workers_alone(bench, pipeline, next(epochs), args) if pipeline is not None else None
    window: list[Any] = []
    before = dict(pipeline.stats) if pipeline is not None else {}
    if args.warm_pass:  # the real window's epochs once untimed: their batch shapes planned (cuDNN, allocator)
        first = epochs.peek()
        # kept: a run meets each shape once, and this is what its first meeting costs against steady state
        rates["first_pass"] = measure(train, [0.0])[0]
        epochs.rewind(first)
        if pipeline is not None:
            before = dict(pipeline.stats)
    rates["real"], stalls["real"], real_seconds = measure(train, real_wait, window if not args.hold else None)
    thread = ({k: v - before[k] for k, v in pipeline.stats.items()} if pipeline is not None else None)
    wait_share = real_wait[0] / real_seconds  # the data wait inside the timed windows (the GPU's idle time)

    if args.hold:  # a few batches of a fresh epoch, replayed
        source = bench.train_batches(next(epochs))
        held = [run.feed.once(b) for b in itertools.islice(source, args.hold)]
        getattr(source, "close", lambda: None)()
        replay = list(itertools.islice(itertools.cycle(held), args.steps))
    else:  # the real window's own batches, in order, on the device once: the same work without the input pipeline
        held = replay = [run.feed.once(b) for b in window]
    train(itertools.islice(itertools.cycle(held), args.warmup))
    sync()
    trained[0] = 0
    start = time.perf_counter()
    train(replay)
    sync()
    rates["synthetic"] = trained[0] / (time.perf_counter() - start)
    del window, held, replay

    hp = cfg.model
    small = small_epochs(bench, int(hp.get("workers", 0) or 0), args.skip)
    if small:
        print(f"warning: {small}")
        notes.append(small)
    unit = spec.sample_unit
    decode = str(getattr(bench, "decode", hp.get("decode", "cpu")))
    ratio = rates["real"] / rates["synthetic"]
    why = output.verdict(rates, wait_share, args.target, hp.get("workers", "-"), decode, unit)
    output.describe(rates, stalls, wait_share, workers, thread, unit, why)
    if args.profile and ratio < args.target:  # what holds it back, kernel by kernel
        _profile(bench, train, args.profile, Path(args.profile_out), next(epochs), sync)
        print(f"profile of {args.profile} real steps: {args.profile_out}")
    teardown = close_loaders(bench)
    print(f"loaders closed in {teardown:.2f} s")
    measured = {"rates": rates, "stalls": stalls, "wait_share": wait_share, "workers": workers, "thread": thread}
    return output.record(args, spec.name, unit, decode, why, measured, teardown, notes, run.ctx.device)


PREFETCH = 2  # harness.interface.loader.RankLoader's batches in flight per worker


def small_epochs(bench: Any, workers: int, skip: int) -> str:
    """Why the rates overstate the loader, where they do: every window starts after an epoch's first
    batch, and while the step waits for it each worker makes PREFETCH batches, so an epoch of little
    more than workers x PREFETCH batches is served from batches made in time the windows leave out
    (SSD, 1,200 COCO-size images at batch 128, 9 batches an epoch: 10,185 images/s with 15 workers and
    499 with 8, where each worker decodes about 90 a second; on 4,000 images 1,453 and 684). '' where
    the epochs are long enough."""
    loader = getattr(bench, "loader", None) or getattr(bench, "train_loader", None)
    try:
        per_epoch = len(loader) if loader is not None and workers else None
    except TypeError:
        per_epoch = None
    ahead = workers * PREFETCH
    if per_epoch is None or per_epoch > 2 * ahead + skip:
        return ""
    return (f"an epoch has {per_epoch} batches and the {workers} workers hold up to {ahead} ahead, made while the "
            f"step waits for each epoch's first batch, which the windows leave out: the loader and training rates "
            f"are overstated; use a dataset of more than {2 * ahead + skip} batches an epoch")


def close_loaders(bench: Any) -> float:
    """Seconds to stop every training loader's persistent workers the model holds (RankLoader.close),
    so that the process ends as soon as its figures are out."""
    from harness.interface.loader import RankLoader

    start = time.perf_counter()
    for value in list(vars(bench).values()):
        if isinstance(value, RankLoader):
            value.close()
    return time.perf_counter() - start


def _workers_alone(bench: Any, pipeline: Any, epoch: int, args: argparse.Namespace) -> float:
    """samples/s of the model's DataLoader alone (its workers, before the GPU pipeline), over --steps batches."""
    loader = getattr(bench, "train_loader", None) or bench.loader
    batches = iter(loader.epoch(epoch))
    for _ in itertools.islice(batches, args.skip):
        pass
    n, start = 0, time.perf_counter()
    for batch in itertools.islice(batches, args.steps):
        n += len(getattr(batch, "offsets", [0, 0])) - 1
    return n / (time.perf_counter() - start)


def _profile(bench: Any, train: Callable[[Iterable[Any]], None], steps: int, out: Path, epoch: int,
             sync: Callable[[], None]) -> None:
    """torch.profiler's kernel table over `steps` real steps (after a few untimed ones)."""
    from torch.profiler import ProfilerActivity, profile

    batches = iter(bench.train_batches(epoch))
    train(itertools.islice(batches, 3))
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        train(itertools.islice(batches, steps))
        sync()
    getattr(batches, "close", lambda: None)()
    averages = prof.key_averages()
    out.write_text(f"{steps} real steps, by GPU time:\n{averages.table(sort_by='cuda_time_total', row_limit=40)}\n"
                   f"by host time:\n{averages.table(sort_by='cpu_time_total', row_limit=25)}\n")
    prof.export_chrome_trace(str(out.with_suffix(".trace.json")))  # each thread's calls and each stream's kernels in time


EXIT_S = 20.0  # after its figures, the process ends within this or dumps every thread's stack and exits 1

if __name__ == "__main__":
    try:
        main()
    except (ConfigError, DataError) as err:  # an option or a dataset it cannot use: its one line, as harness.train says it
        sys.exit(f"pipeline_bench.py: {err}")
    # a process that printed its figures and then hangs is a bug to see (which thread waits on what),
    # not a measurement that `timeout` ends with nothing said
    faulthandler.dump_traceback_later(EXIT_S, exit=True)
