"""What `python -m harness.bench` runs: the suite's models with the real-scale settings each is
benchmarked at, and a cell's command line and time estimate.

The suite is every registered model whose ModelSpec has a `suite` entry (harness.interface.SuiteEntry):
the throughput-only models first (the GPU study's workloads), then the time-to-train models in their
throughput mode (each at its real dataset's config, which reads no data in mode=throughput), each group
in the registry's order. Windows are aimed at a length in seconds, not a step count: a cell runs
round(window_s / step) steps per window, from its entry's guess of the step time on one H200; a model
outside the suite (run with --models) gets SuiteEntry's defaults, 0.1 s / 0.3 s.

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

    @property
    def name(self) -> str:
        return "-".join([self.model] + ([self.workload] if self.workload else []) + [self.precision, f"{self.gpus}gpu"])

    def step_s(self) -> float:
        amp, fp32 = entry(self.model).step_s
        return amp if self.precision in ("amp", "bf16") else fp32

    def overrides(self, device: str, *, smoke: bool, window_s: float, warmup_s: float, repeats: int) -> list[str]:
        spec = registry.get(self.model)
        out = [f"model={self.model}", "mode=throughput", f"precision={self.precision}", f"gpus={self.gpus}",
               f"device={device}", "progress=false", "tensorboard=false"]
        if self.workload:
            out.append(f"model.workload={self.workload}")
        if smoke:  # the debug preset (a model without one: its own defaults), one warm-up and one counted step
            debug = [f"+debug={self.model}"] if self.model in config.choices("debug") else []
            return out + debug + ["warmup_steps=1", "throughput_steps=1", "throughput_repeats=1", "telemetry=false"]
        if spec.task is not None:
            out.append(f"dataset={spec.task.real_dataset}")
        step = self.step_s()
        return out + list(entry(self.model).overrides) + [
            f"warmup_steps={max(5, round(warmup_s / step))}", f"throughput_steps={max(3, round(window_s / step))}",
            f"throughput_repeats={repeats}"]


def estimate_s(cell: Cell, device: str, smoke: bool, window_s: float, warmup_s: float, repeats: int) -> float:
    """Seconds a cell should take: start-up, warm-up (and the first steps' one-off work), windows."""
    if smoke or device == "cpu":
        return SMOKE_S
    return STARTUP_S[1 if cell.gpus == 1 else "many"] + warmup_s + repeats * window_s + 3.0
