"""The data wait is the time the loop waits for each counted step's batch, evaluations and the hooks'
own work left out, wherever the timer sits among the hooks; on a GPU, no more than the GPU stood idle
for it, so a host that runs ahead of the GPU does not count its wait in next() as the step's."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from harness.observe import datawait
from harness.observe.datawait import DataWait
from harness.observe.hooks import DeviceWait, EpochStats, Hook, Hooks, StepDone
from harness.run.loop import EpochTraining


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _done(n: int, waited: float) -> StepDone:
    return StepDone(1, n, n, 4, 4 * n, torch.tensor(0.0), host_wait=waited)


def test_waits_of_counted_steps_add_up():
    timer = DataWait(warmup_steps=1)
    timer.before_epoch(1, 3)
    timer.after_step(_done(1, 5.0))  # the first batch of the run: a warm-up step, not counted
    timer.after_step(_done(2, 0.25))
    timer.after_step(_done(3, 0.5))
    stats = EpochStats(1, 3)
    timer.end_epoch(stats)
    assert stats.data_wait_s == 0.75


class SlowHook(Hook):
    """A hook whose own work takes 10 s a step, before and after it."""

    def __init__(self, clock: Clock):
        self.clock = clock

    def before_step(self, step: int) -> None:
        self.clock.now += 10.0

    def after_step(self, done: StepDone) -> None:
        self.clock.now += 10.0


def test_the_loop_times_the_wait_so_no_hook_counts_as_one_in_either_order(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("time.perf_counter", clock)
    run = SimpleNamespace(ctx=SimpleNamespace(device=torch.device("cpu")), trained=torch.nn.Linear(1, 1))

    def batches():
        for wait in (0.25, 0.5, 1.0):
            clock.now += wait  # the data loader's time for this batch
            yield torch.zeros(1), None

    def step(run, batch):
        clock.now += 2.0  # the training step itself
        return torch.tensor(1.0), None, 4

    for order in ("timer first", "timer last"):
        timer = DataWait(warmup_steps=0)
        hooks = [timer, SlowHook(clock)] if order == "timer first" else [SlowHook(clock), timer]
        training = EpochTraining(run, 1, batches(), Hooks(hooks), 3, 0, step)
        training.train()
        stats = EpochStats(1, 3)
        Hooks(hooks).end_epoch(stats)
        assert stats.data_wait_s == 1.75, order


def test_on_a_cpu_the_wait_is_the_hosts():
    assert datawait.waited([]) == 0.0 and datawait.waited([(0.25, None), (0.5, None)]) == 0.75


class Stamp:
    """A CUDA event as the timer reads it: when the GPU reached it, in seconds."""

    def __init__(self, at: float):
        self.at = at

    def elapsed_time(self, end: "Stamp") -> float:
        return (end.at - self.at) * 1000.0  # milliseconds, as torch.cuda.Event's

    def synchronize(self) -> None:
        pass


def test_on_a_gpu_a_step_waits_no_longer_than_the_gpu_stood_idle_for_its_batch():
    ahead = DeviceWait(Stamp(1.0), Stamp(1.0), Stamp(1.001))  # the host waited 40 ms in next() while the GPU trained
    late = DeviceWait(Stamp(2.0), Stamp(2.05), Stamp(2.06))  # the GPU stood 60 ms: the copy came 50 ms late
    hooks = DeviceWait(Stamp(3.0), Stamp(3.0), Stamp(3.5))  # 500 ms idle, of which the host waited 20 ms
    assert round(datawait.waited([(0.04, ahead)]), 6) == 0.001
    assert round(datawait.waited([(0.005, late)]), 6) == 0.055  # the host's 5 ms and the copy's 50
    assert round(datawait.waited([(0.02, hooks)]), 6) == 0.02


def test_the_warm_up_steps_wait_is_kept_apart_in_the_epochs_that_hold_them():
    timer = DataWait(warmup_steps=3)
    waits = {1: (4.0, 0.25), 2: (0.5, 0.125)}  # epoch 1: the loader's start-up, then a steady wait
    epochs = []
    for epoch, (first, rest) in waits.items():
        timer.before_epoch(epoch, 2)
        for n in (1, 2):
            step = 2 * (epoch - 1) + n
            timer.after_step(StepDone(epoch, n, step, 4, 4 * n, torch.tensor(0.0), host_wait=first if n == 1 else rest))
        stats = EpochStats(epoch, 2)
        timer.end_epoch(stats)
        epochs.append((stats.data_wait_s, stats.data_wait_warmup_s))
    timer.before_epoch(3, 2)
    timer.after_step(StepDone(3, 1, 5, 4, 4, torch.tensor(0.0), host_wait=0.5))
    stats = EpochStats(3, 1)
    timer.end_epoch(stats)
    # steps 1-3 are the warm-up: epoch 1's two and epoch 2's first; epoch 3 had none
    assert epochs == [(0.0, 4.25), (0.125, 0.5)] and (stats.data_wait_s, stats.data_wait_warmup_s) == (0.5, None)


def test_with_several_ranks_the_epoch_counts_the_longest_wait_and_keeps_each_ranks():
    # rank 1's numbers as its loop measured them, handed over by the gather (all_gather on a real group)
    timer = DataWait(warmup_steps=1, gather=lambda mine: [mine, [0.75, 2.0]])
    timer.before_epoch(1, 3)
    for n, waited in ((1, 0.5), (2, 0.125), (3, 0.125)):
        timer.after_step(_done(n, waited))
    stats = EpochStats(1, 3)
    timer.end_epoch(stats)
    assert (stats.data_wait_ranks, stats.data_wait_s, stats.data_wait_warmup_s) == ([0.25, 0.75], 0.75, 2.0)


def test_the_run_names_the_rank_that_waited_longest_over_its_epochs():
    from harness.run.loop import ended

    kept = [EpochStats(1, 2, own_seconds=1.0, data_wait_ranks=[0.5, 0.25]),
            EpochStats(2, 2, own_seconds=1.0, data_wait_ranks=[0.0, 0.5])]
    result = ended("success", [object(), object()], [], kept)  # type: ignore[list-item]
    assert (result.data_wait_s, result.data_wait_rank, result.data_wait_share) == (0.75, 1, 0.375)
    one = ended("success", [object()], [], [EpochStats(1, 2, own_seconds=1.0, data_wait_ranks=[0.5])])  # type: ignore[list-item]
    assert (one.data_wait_s, one.data_wait_rank) == (0.5, None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU's idle time is read from CUDA events")
@pytest.mark.parametrize("loader_ms,gpu_ms,low,high", [(20, 80, 0.0, 0.05), (60, 5, 0.6, 1.0)])
def test_a_loader_faster_than_the_gpu_costs_nothing_and_a_slower_one_its_lateness(loader_ms, gpu_ms, low, high):
    """A host that runs ahead waits in next() for batches the GPU is not yet ready for: not a wait."""
    import time

    from harness.run.feed import Feed

    device = torch.device("cuda")
    run = SimpleNamespace(ctx=SimpleNamespace(device=device), trained=torch.nn.Linear(1, 1))
    spin = _cycles_per_ms(device)

    pinned = [torch.zeros(256).pin_memory() for _ in range(12)]

    def loader():
        for batch in pinned:
            time.sleep(loader_ms / 1000)
            yield batch

    def step(run, batch):
        torch.cuda._sleep(int(gpu_ms * spin))  # the step's GPU work, queued without a host wait
        return batch.sum(), None, 1

    timer = DataWait(warmup_steps=2)
    training = EpochTraining(run, 1, Feed(device).batches(loader()), Hooks([timer]), 12, 0, step)
    started = time.perf_counter()
    training.train()
    stats = EpochStats(1, 12)
    timer.end_epoch(stats)
    seconds = time.perf_counter() - started
    assert stats.data_wait_s is not None and low <= stats.data_wait_s / seconds <= high, (
        f"waited {stats.data_wait_s:.3f} s of {seconds:.3f} s; the steps' GPU work was planned at {12 * gpu_ms} ms")


def _cycles_per_ms(device: torch.device) -> float:
    """The spin's clock cycles a millisecond at the clock the test will run at: a GPU at rest starts at a low
    clock and speeds up under work, so a rate read cold can be several times low (a GPU check on an H100,
    the GPU shared with other tests, saw a step spun for "80 ms" take about 22 ms). Read after a warm spin, the highest of three: a spin timed at a higher clock
    only runs longer, which leaves either case's side the slower one."""
    torch.cuda._sleep(200_000_000)

    def rate() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(20_000_000)
        end.record()
        end.synchronize()
        return 20_000_000 / start.elapsed_time(end)

    return max(rate() for _ in range(3))
