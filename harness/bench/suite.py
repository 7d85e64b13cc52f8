"""What `python -m harness.bench` runs: the suite's models with the real-scale settings each is
benchmarked at, the matrix of cells its options ask for (checked before any starts), and a cell's
command line and time estimate.

The suite is every registered model whose ModelSpec has a `suite` entry (harness.interface.SuiteEntry):
the throughput-only models first (the GPU study's workloads), then the time-to-train models in their
throughput mode (each at its real dataset's config, which reads no data in mode=throughput), each group
in the registry's order. Windows are aimed at a length in seconds, not a step count: a cell passes
warmup_s and throughput_window_s to harness.train, which warms up for that long and sizes each window
from the step time it measured (harness/run/throughput.py measure_throughput), so the cell's command line,
run by hand, measures the same steps. The entry's guess of the step time on one H200 only sizes the
bench's time estimate; a model outside the suite (run with --models) gets SuiteEntry's, 0.1 s / 0.3 s.

    python -c "from harness.bench.suite import suite_models; print(suite_models())"
"""
from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from harness import config, registry
from harness.config import presets
from harness.errors import ConfigError
from harness.interface import SuiteEntry

STARTUP_S = {1: 15.0, "many": 25.0}  # process, CUDA and model start; NCCL too on several GPUs
SMOKE_S = 3.0  # a forked smoke cell (harness/bench/start.py): 1-3.5 s on a 2-core CPU, two at a time
# a full-size CPU cell: no figure to go by (the step times are one H200's; a full-size bert_base cell had
# not ended after 120 s on 2 cores), so this only orders --budget-min and seeds the ETA, which the cells'
# measured seconds then scale; it is never printed as an estimate (announce)
CPU_S = 15.0


def suite_models() -> list[str]:
    """The registered models that declare a suite entry, in the suite's order."""
    listed = [s for s in registry.models() if s.suite is not None]
    return [s.name for s in sorted(listed, key=lambda s: not s.throughput_only)]


def entry(model: str) -> SuiteEntry:
    return registry.get(model).suite or SuiteEntry()


@dataclass(frozen=True)
class Cell:
    model: str
    workload: Optional[str]
    precision: str
    gpus: int
    eager: bool = False  # the plain eager step instead of the model's fast path (harness/fastpath.py)

    @property
    def name(self) -> str:
        return "-".join([self.model] + ([self.workload] if self.workload else []) + [self.precision]
                        + (["eager"] if self.eager else []) + [f"{self.gpus}gpu"])

    def step_s(self) -> float:
        amp, fp32 = entry(self.model).step_s
        return amp if self.precision in ("amp", "bf16") else fp32

    def overrides(self, device: str, *, smoke: bool, window_s: float, warmup_s: float, repeats: int,
                  seed: Optional[int] = 1) -> list[str]:
        """The cell's `python -m harness.train` overrides. `seed`: the synthetic batch's (a model
        whose batch varies with it, Tacotron 2's utterance lengths, counts the samples it draws), the
        same in every cell so that precisions and GPU counts are set against one workload."""
        spec = registry.get(self.model)
        out = [f"model={self.model}", "mode=throughput", f"precision={self.precision}", f"gpus={self.gpus}",
               f"device={device}", "progress=false", "tensorboard=false"] + ([] if seed is None else [f"seed={seed}"])
        if self.workload:
            out.append(f"model.workload={self.workload}")
        if self.eager:
            out.append("eager=true")
        if smoke:  # the debug preset (a model without one: its own defaults), one warm-up and one counted step
            debug = [f"+debug={self.model}"] if self.model in _debug_presets(tuple(s.name for s in registry.models())) else []
            return out + debug + ["warmup_steps=1", "throughput_steps=1", "throughput_repeats=1", "telemetry=false"]
        if spec.task is not None:
            out.append(f"dataset={spec.task.real_dataset}")
        # one step of one-off work (CUDA and cuDNN set-up, allocations, a compilation), then timed
        # steps up to warmup_s, whose median sizes the windows
        return out + list(entry(self.model).overrides) + [
            "warmup_steps=1", f"warmup_s={warmup_s:g}", f"throughput_window_s={window_s:g}",
            f"throughput_repeats={repeats}"]


@functools.lru_cache(maxsize=4)
def _debug_presets(models: tuple[str, ...]) -> frozenset[str]:
    """The debug presets of these registered models: looked up once, not once per cell (a Hydra set-up each)."""
    return frozenset(presets.choices("debug"))


def estimate_s(cell: Cell, device: str, smoke: bool, window_s: float, warmup_s: float, repeats: int) -> float:
    """Seconds a cell should take: start-up, warm-up (and the first steps' one-off work), windows."""
    if smoke:
        return SMOKE_S
    if device == "cpu":
        return CPU_S
    step = cell.step_s()  # a window holds at least one step, the warm-up at least three
    return STARTUP_S[1 if cell.gpus == 1 else "many"] + max(warmup_s, 3 * step) + repeats * max(window_s, step) + 3.0


def check_overrides(cells: list[Cell], device: str, args) -> None:
    """Compose each model's (and workload's) first cell with the --set overrides, as harness.train will
    compose every cell: a bad key or value is one ConfigError naming it before any cell starts."""
    seen: set[tuple[str, Optional[str]]] = set()
    for cell in cells:
        if (cell.model, cell.workload) in seen:
            continue
        seen.add((cell.model, cell.workload))
        overrides = cell.overrides(device, smoke=args.smoke, window_s=args.window_s, warmup_s=args.warmup_s,
                                   repeats=args.repeats, seed=args.seed)
        try:
            config.check_cli(overrides + list(args.set))
        except ConfigError as err:
            raise ConfigError(f"--set {' '.join(args.set)}: {err}" if args.set else str(err)) from None


def default_gpus(available: int) -> list[int]:
    """1 and every power of two up to what the machine has."""
    return [2 ** k for k in range(int(math.log2(available)) + 1)] if available >= 1 else [1]


def plan(args: argparse.Namespace, available: int, device: str = "cuda") -> list[Cell]:
    """The matrix's cells, fewest GPUs first (so that cells of one GPU can run side by side)."""
    entries = [e.partition(":") for e in args.models or suite_models()]
    for model, _, _ in entries:
        registry.get(model)  # ConfigError for an unknown model
    entries = list(dict.fromkeys((m, s, w) for m, s, w in entries))  # a model named twice is one model's cells
    counts = list(dict.fromkeys([1] if args.smoke else args.gpus or default_gpus(available)))  # --gpus 1 1: once
    if device == "cuda" and max(counts) > available:
        raise ConfigError(f"--gpus {max(counts)} but this machine has {available} GPU(s); ask for at most {available}")
    paths = ["eager"] if getattr(args, "eager", False) else list(getattr(args, "paths", None) or ["fast"])
    if args.smoke or device != "cuda":
        paths = ["fast"]  # a CPU run takes no fast path: the eager step either way
    return [Cell(model, workload or None, precision, gpus, eager=path == "eager") for gpus in counts
            for model, _, workload in entries for precision in precisions(args, device) for path in paths]


def precisions(args: argparse.Namespace, device: str) -> list[str]:
    """The cells' precisions: --precisions, else tf32 and amp on CUDA and fp32 on a CPU, where the two
    CUDA ones cannot run (asked for by name there, they run and fail as cells, each with its reason)."""
    if args.smoke:
        return ["fp32"]
    if args.precisions:
        return list(dict.fromkeys(args.precisions))
    return ["tf32", "amp"] if device == "cuda" else ["fp32"]


def wall_estimate(cells: Sequence[Cell], est: Sequence[float], jobs: int, device: str, gpu_count: int) -> float:
    """Seconds the cells should take with --jobs of them at once on GPUs of their own."""
    return sum(e / max(1, min(jobs, gpu_count // c.gpus if device == "cuda" else jobs)) for c, e in zip(cells, est))


def usage_error(args: argparse.Namespace, out: Path) -> Optional[str]:
    """What is wrong with the numbers given, or a --tables-only folder without bench runs to tabulate."""
    for flag, value, low, strict in (("--timeout", args.timeout, 0, True), ("--repeats", args.repeats, 1, False),
                                     ("--jobs", args.jobs, 1, False), ("--window-s", args.window_s, 0, True),
                                     ("--warmup-s", args.warmup_s, 0, False),
                                     ("--budget-min", args.budget_min, 0, True)):
        if value is not None and (not math.isfinite(value) or value < low or (strict and value == low)):
            return f"{flag} {value:g} must be {'above' if strict else 'at least'} {low}"
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder: name a folder for the cells' runs and tables"
    from harness.errors import ConfigError
    from harness.run import threads

    try:  # every cell would fail on a thread setting OpenMP ignores: said once, before any
        threads.check_user_settings()
    except ConfigError as err:
        return str(err)
    bench = (out / "bench.json").is_file() or (out / "bench.jsonl").is_file()  # what harness.bench writes beside them
    if args.tables_only and not (bench and any((out / "runs").glob("*/result.json"))):
        return (f"--tables-only: {out} holds no bench runs (runs/<cell>/result.json); give --out of a folder "
                "that harness.bench ran cells into")
    return None


def announce(cells: Sequence[Cell], todo: Sequence[Cell], est: Sequence[float], out: Path, args: argparse.Namespace,
             device: str, meta: dict) -> list[str]:
    """The lines printed before the first cell: how many cells and how long they should take, and, where
    PyTorch sees no GPU and no --device was asked, a note that the suite falls back to the CPU at full
    size. A full-size matrix on a CPU gets no time estimate, only the bound each cell is held to."""
    lines = []
    full_cpu = device == "cpu" and not args.smoke
    if full_cpu and args.device is None and not meta.get("gpu_count") and todo:
        lines.append("note: PyTorch sees no GPU here, so these are the full-size (real-scale) cells on the CPU; "
                     "--smoke is the quick check that each model runs (its debug preset, 2 steps)")
    if not cells:
        return lines
    if full_cpu and todo:
        when = (f"no time estimate for full-size cells on a CPU (the suite's step times are GPU figures); "
                f"each cell is stopped after --timeout {args.timeout:g} s")
    else:
        when = f"estimated {wall_estimate(todo, est, args.jobs, device, meta['gpu_count']) / 60:.1f} min"
    return lines + [f"{len(cells)} cells ({len(cells) - len(todo)} kept from {out}) -> {len(todo)} to run, {when}; "
                    f"{meta['machine']}"]
