"""What `python -m harness.bench` runs: the suite's models with the real-scale settings each is
benchmarked at, and a cell's command line and time estimate.

The suite is every registered model whose ModelSpec has a `suite` entry (harness.interface.SuiteEntry):
the throughput-only models first (the GPU study's workloads), then the time-to-train models in their
throughput mode (each at its real dataset's config, which reads no data in mode=throughput), each group
in the registry's order. Windows are aimed at a length in seconds, not a step count: a cell passes
warmup_s and throughput_window_s to harness.train, which warms up for that long and sizes each window
from the step time it measured (harness/run/throughput.py measure_throughput), so the cell's command line,
run by hand, measures the same steps. The entry's guess of the step time on one H200 only sizes the
bench's time estimate; a model outside the suite (run with --models) gets SuiteEntry's, 0.1 s / 0.3 s.

    python -c "from harness.bench_suite import suite_models; print(suite_models())"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness import config, registry
from harness.interface import SuiteEntry

STARTUP_S = {1: 15.0, "many": 25.0}  # process, CUDA and model start; NCCL too on several GPUs
SMOKE_S = 15.0


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
            debug = [f"+debug={self.model}"] if self.model in config.choices("debug") else []
            return out + debug + ["warmup_steps=1", "throughput_steps=1", "throughput_repeats=1", "telemetry=false"]
        if spec.task is not None:
            out.append(f"dataset={spec.task.real_dataset}")
        # one step of one-off work (CUDA and cuDNN set-up, allocations, a compilation), then timed
        # steps up to warmup_s, whose median sizes the windows
        return out + list(entry(self.model).overrides) + [
            "warmup_steps=1", f"warmup_s={warmup_s:g}", f"throughput_window_s={window_s:g}",
            f"throughput_repeats={repeats}"]


def estimate_s(cell: Cell, device: str, smoke: bool, window_s: float, warmup_s: float, repeats: int) -> float:
    """Seconds a cell should take: start-up, warm-up (and the first steps' one-off work), windows."""
    if smoke or device == "cpu":
        return SMOKE_S
    step = cell.step_s()  # a window holds at least one step, the warm-up at least three
    return STARTUP_S[1 if cell.gpus == 1 else "many"] + max(warmup_s, 3 * step) + repeats * max(window_s, step) + 3.0
