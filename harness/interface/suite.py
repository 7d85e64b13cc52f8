"""How a model is listed beside the others: its MLPerf category and its entry in the GPU benchmark suite.

A model declares both in its ModelSpec (`category=`, `suite=SuiteEntry(...)`), so that the bench's
matrix (harness/bench/suite.py) and the report's per-category geometric means
(harness/results/read/own.py) find it without any file of harness/ naming it.

    python -c "from harness import registry; print([(s.name, s.category, s.suite) for s in registry.models()])"
"""
from __future__ import annotations

from dataclasses import dataclass

# MLPerf's areas, which the report's geometric means are taken over; "other" for what fits none
VISION, LANGUAGE, RECOMMENDATION, SPEECH, REINFORCEMENT, OTHER = (
    "vision", "language", "recommendation", "speech", "reinforcement", "other")
CATEGORIES = (VISION, LANGUAGE, RECOMMENDATION, SPEECH, REINFORCEMENT, OTHER)


@dataclass(frozen=True)
class SuiteEntry:
    """A model's cell settings in `python -m harness.bench`: overrides beside its real-scale preset,
    and a guess of its seconds per step on one H200 (amp or bf16, fp32 or tf32; from FLOP counts and
    the published figures, until measured ones replace them). The guess sizes the bench's time
    estimate only: a cell's windows are sized from the step time the run measures in its warm-up."""

    overrides: tuple[str, ...] = ()
    step_s: tuple[float, float] = (0.1, 0.3)

    def __post_init__(self) -> None:
        if len(self.step_s) != 2 or min(self.step_s) <= 0:
            raise ValueError(f"SuiteEntry.step_s={self.step_s}: give two positive seconds (amp, fp32)")
