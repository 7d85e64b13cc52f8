"""The throughput meter counts training time only, after warm-up, summed over ranks."""
from __future__ import annotations

from harness.observe import meter as meter_mod
from harness.observe.meter import ThroughputMeter


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_warmup_steps_and_time_are_left_out(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(meter_mod.time, "perf_counter", clock)
    syncs = []
    m = ThroughputMeter(warmup_steps=2, sync=lambda: syncs.append(clock.now))
    m.begin_epoch()
    for _ in range(2):  # warm-up: 10 s per step
        clock.now += 10
        m.step(100)
    for _ in range(3):  # counted: 1 s per step
        clock.now += 1
        m.step(100)
    epoch = m.finish_epoch()
    assert (epoch.samples, epoch.seconds, epoch.throughput) == (300, 3.0, 100.0)
    assert m.epoch_seconds == 23.0  # the epoch's whole training time is still known
    clock.now += 50  # evaluation: not training time
    m.begin_epoch()
    clock.now += 2
    m.step(400)
    m.finish_epoch()
    assert m.throughput() == 700 / 5.0
    assert syncs == [0.0, 20.0, 23.0, 73.0, 75.0]  # epoch boundaries and the end of warm-up only


def test_a_run_shorter_than_warmup_has_no_throughput():
    m = ThroughputMeter(warmup_steps=10, sync=lambda: None)
    m.begin_epoch()
    m.step(5)
    assert m.finish_epoch().throughput is None and m.throughput() is None


def test_samples_are_summed_and_seconds_averaged_over_ranks(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(meter_mod.time, "perf_counter", clock)
    # two ranks: the other one counted 100 samples in 3 s
    m = ThroughputMeter(0, lambda: None, all_ranks_sum=lambda v: [v[0] + 100, v[1] + 3.0], world_size=2)
    m.begin_epoch()
    clock.now += 1
    m.step(100)
    epoch = m.finish_epoch()
    assert (epoch.samples, epoch.seconds) == (200, 2.0)
