"""The data wait is the time between one step's end and the next one's start, over the counted steps,
evaluations left out; on a CPU nothing is copied."""
from __future__ import annotations

import torch

from harness.observe import datawait
from harness.observe.datawait import DataWait
from harness.observe.hooks import EpochStats, StepDone


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _done(n: int) -> StepDone:
    return StepDone(1, n, n, 4, 4 * n, torch.tensor(0.0))


def test_waits_between_counted_steps_add_up_and_an_evaluation_is_not_one(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(datawait.time, "perf_counter", clock)
    timer = DataWait(warmup_steps=1)
    timer.before_epoch(1, 3)
    clock.now += 5.0  # the first batch of the run: a warm-up step, not counted
    timer.before_step(1)
    clock.now += 1.0  # the step itself
    timer.after_step(_done(1))
    clock.now += 0.25  # waiting for batch 2
    timer.before_step(2)
    clock.now += 1.0
    timer.after_step(_done(2))
    clock.now += 30.0  # an evaluation inside the epoch
    timer.after_eval(2, {"acc": 0.5}, 30.0)
    clock.now += 0.5  # waiting for batch 3
    timer.before_step(3)
    timer.after_step(_done(3))
    stats = EpochStats(1, 3)
    timer.end_epoch(stats)
    assert stats.data_wait_s == 0.75


def test_no_copy_on_a_cpu():
    assert datawait.copy_seconds([]) == 0.0
