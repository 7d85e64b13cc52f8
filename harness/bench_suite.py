"""What `python -m harness.bench` runs: the suite's models with the real-scale settings each is
benchmarked at, and a cell's command line and time estimate.

Windows are aimed at a length in seconds, not a step count: each suite entry carries a guess of
its step time on one H200 (amp and fp32; from FLOP counts and the published figures, to be replaced
by measured ones), and a cell runs round(window_s / step) steps per window. A model outside the
suite table gets 0.1 s / 0.3 s.

    python -c "from harness.bench_suite import suite_models; print(suite_models())"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness import registry


@dataclass(frozen=True)
class SuiteEntry:
    overrides: tuple[str, ...] = ()  # beside the model's real-scale preset
    step_s: tuple[float, float] = (0.1, 0.3)  # guessed seconds per step on one H200: (amp or bf16, fp32 or tf32)


# The suite, in table order: the GPU study's workloads, then the time-to-train models in their
# throughput mode (each at its real dataset's config, which reads no data in mode=throughput).
SUITE: list[tuple[str, SuiteEntry]] = [
    ("bert_base", SuiteEntry(step_s=(0.03, 0.12))),  # SQuAD 384, batch 32: 6.6 TFLOP a step
    ("bert_large", SuiteEntry(step_s=(0.09, 0.40))),  # 23.7 TFLOP a step
    ("txl_base", SuiteEntry(step_s=(0.05, 0.15))),  # 6,144 tokens a step
    ("txl_large", SuiteEntry(step_s=(0.14, 0.55))),  # 6,144 tokens a step
    ("tacotron2", SuiteEntry(step_s=(0.55, 0.80))),  # ~870 decoder steps of small kernels
    ("waveglow", SuiteEntry(step_s=(0.15, 0.50))),  # 80,000 samples a step
    ("gnmt", SuiteEntry(("model.batch_size=512",), (0.05, 0.20))),  # the batch docs/gnmt.md measured 572k tokens/s at
    ("ncf", SuiteEntry(("model.batch_size=1048576",), (0.011, 0.03))),  # 2^20, as docs/ncf.md's 101M samples/s
    ("resnet", SuiteEntry(step_s=(0.08, 0.30))),
    ("ssd", SuiteEntry(step_s=(0.10, 0.35))),
    ("transformer", SuiteEntry(step_s=(0.10, 0.35))),
    ("maskrcnn", SuiteEntry(step_s=(0.30, 0.90))),
]
STARTUP_S = {1: 15.0, "many": 25.0}  # process, CUDA and model start; NCCL too on several GPUs
SMOKE_S = 15.0


def suite_models() -> list[str]:
    """The suite's models that this checkout registers (resnet, ssd, ... join once they exist)."""
    known = {s.name for s in registry.MODELS}
    return [name for name, _ in SUITE if name in known]


def entry(model: str) -> SuiteEntry:
    return dict(SUITE).get(model, SuiteEntry())


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
        if smoke:  # the debug preset, one warm-up step and one counted step
            return out + [f"+debug={self.model}", "warmup_steps=1", "throughput_steps=1", "throughput_repeats=1",
                          "telemetry=false"]
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
