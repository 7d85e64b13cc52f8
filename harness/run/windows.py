"""How a throughput measurement is timed, resolved once from the harness's options with their nulls
filled (no torch import: the run's record reads it before the rank starts).

    python -c "from harness.config import compose; from harness.run.windows import Windows; print(Windows.of(compose(['mode=throughput'])))"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

TRAIN_WARMUP_STEPS, THROUGHPUT_WARMUP_STEPS, TIMED_WARMUP_S = 20, 1, 3.0


@dataclass(frozen=True)
class Windows:
    """What a throughput measurement times, resolved once from the harness's options (their nulls
    filled): `warmup_steps` untimed steps, a timed warm-up of `warmup_s` seconds (None: none), then
    `repeats` windows of `window_s` seconds each (None: `steps` steps each)."""

    warmup_steps: int
    warmup_s: Optional[float]
    window_s: Optional[float]
    steps: int
    repeats: int

    @classmethod
    def of(cls, cfg: Any) -> "Windows":
        counted = cfg.get("throughput_steps")
        timed = counted is None
        warmup = cfg.get("warmup_steps")
        return cls(warmup_steps=THROUGHPUT_WARMUP_STEPS if warmup is None else int(warmup),
                   warmup_s=cfg.get("warmup_s") or (TIMED_WARMUP_S if timed else None),
                   window_s=float(cfg.throughput_window_s) if timed else None,
                   steps=int(counted) if counted is not None else 1, repeats=int(cfg.throughput_repeats))


def warmup_steps(cfg: Any) -> int:
    """The steps the throughput figure leaves out, in either mode (warmup_steps, its null filled)."""
    given = cfg.get("warmup_steps")
    if given is not None:
        return int(given)
    return THROUGHPUT_WARMUP_STEPS if str(cfg.get("mode")) == "throughput" else TRAIN_WARMUP_STEPS
