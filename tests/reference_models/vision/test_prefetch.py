"""The decode threads (reference_models/vision/prefetch.py) on the CPU: the loader's order whatever the
number of threads and their speed, each thread's own slots, a failure in any thread or in the loader
reaching the training loop at its batch, an early stop, Ctrl-C and an epoch's end leaving no thread."""
from __future__ import annotations

import random
import threading
import time

import pytest
import torch

from harness.interface import DataError
from reference_models.vision.prefetch import DeviceBatches

CPU = torch.device("cpu")


def _threads_named() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("device-batches")]


def _lanes(n: int, seen: list[tuple[int, int, int]], delay: float = 0.004):
    """n prepare functions that record (batch, thread, slot) and take a random while, as decodes do."""
    def make(lane: int):
        rng = random.Random(lane)

        def prepare(batch: int, slot: int):
            time.sleep(rng.random() * delay)
            seen.append((batch, lane, slot))
            return (torch.tensor([batch]),), None
        return prepare
    return [make(t) for t in range(n)]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_batches_reach_the_step_in_the_loaders_order_whatever_the_threads_and_their_speed(threads):
    seen: list[tuple[int, int, int]] = []
    pipeline = DeviceBatches(_lanes(threads, seen), CPU, depth=3)
    out = [int(t) for (t,) in pipeline(range(23))]
    assert out == list(range(23))  # 23: the epoch's end falls in the middle of a round of threads
    assert sorted(b for b, _, _ in seen) == list(range(23))
    assert all(lane == b % threads for b, lane, _ in seen)  # batch k from thread k mod N
    slots = {lane: {s for _, t, s in seen if t == lane} for lane in range(threads)}
    assert all(not slots[a] & slots[b] for a in slots for b in slots if a != b)  # each thread its own buffers
    assert pipeline.stats["batches"] == 23 and pipeline.stats["prepare_s"] > 0
    assert _threads_named() == []


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_failure_in_any_thread_reaches_the_training_loop_after_every_batch_before_it(threads):
    def broken(lane: int):
        def prepare(batch: int, slot: int):
            if batch == 4:
                raise DataError("a training image cannot be decoded (batch 4)")
            time.sleep(0.002 * (lane + 1))
            return (torch.tensor([batch]),), None
        return prepare

    seen = []
    with pytest.raises(DataError, match="batch 4"):
        for (t,) in DeviceBatches([broken(t) for t in range(threads)], CPU, depth=2)(range(50)):
            seen.append(int(t))
    assert seen == [0, 1, 2, 3]
    assert _threads_named() == []


def _loader(fail_at: int, error: BaseException):
    for i in range(100):
        if i == fail_at:
            raise error
        yield i


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("error", [DataError("data/train/n01/x.JPEG is truncated"), KeyboardInterrupt()])
def test_the_loaders_error_or_ctrl_c_in_it_reaches_the_training_loop_at_its_batch(threads, error):
    seen: list[int] = []
    with pytest.raises(type(error)):
        for (t,) in DeviceBatches(_lanes(threads, []), CPU, depth=2)(_loader(5, error)):
            seen.append(int(t))
    assert seen == [0, 1, 2, 3, 4]
    assert _threads_named() == []


@pytest.mark.parametrize("threads", [1, 3])
def test_an_early_stop_or_ctrl_c_in_the_training_loop_ends_every_thread(threads):
    pipeline = DeviceBatches(_lanes(threads, []), CPU, depth=3)
    batches = pipeline(iter(range(1000)))
    assert int(next(batches)[0]) == 0
    batches.close()  # the consumer stops after one batch (a run's max_steps, an interrupted epoch)
    assert _threads_named() == []
    with pytest.raises(KeyboardInterrupt):
        for (t,) in pipeline(iter(range(1000))):
            if int(t) == 6:
                raise KeyboardInterrupt  # Ctrl-C arrives in the training thread, in the middle of a step
    assert _threads_named() == []
    assert list(pipeline(iter([]))) == []  # an empty epoch ends at once
    assert _threads_named() == []


def test_one_prepare_function_is_one_thread_as_before():
    pipeline = DeviceBatches(lambda batch, slot: ((torch.tensor([batch]),), None), CPU, depth=3)
    assert pipeline.threads == 1 and [int(t) for (t,) in pipeline(range(5))] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="at least one prepare"):
        DeviceBatches([], CPU)


def test_closing_at_the_interpreters_exit_does_not_wait_for_threads_that_no_longer_run(monkeypatch):
    """A generator left open is closed by the exit's last garbage collection, when no other thread
    runs: waiting for its producers there hung a process after it had printed its figures."""
    from reference_models.vision import prefetch

    release = threading.Event()
    stuck = threading.Thread(target=release.wait, daemon=True)  # a producer that would never end
    stuck.start()
    monkeypatch.setattr(prefetch.sys, "is_finalizing", lambda: True)
    start = time.perf_counter()
    prefetch._stop_all([stuck], [])
    assert time.perf_counter() - start < 0.5 and stuck.is_alive()
    monkeypatch.setattr(prefetch.sys, "is_finalizing", lambda: False)
    monkeypatch.setattr(prefetch, "STOP_S", 0.2)  # otherwise a bounded wait, then the daemon is left behind
    start = time.perf_counter()
    prefetch._stop_all([stuck], [])
    assert 0.2 <= time.perf_counter() - start < 1.5
    release.set()
    stuck.join()


def test_a_pipeline_on_a_device_named_without_an_index_keeps_that_devices_number(monkeypatch):
    """torch.device('cuda') reaches torch.cuda.set_device in each thread, which takes an index only
    (the H200's `Expected a torch.device with a specified index`): the pipeline names the current one."""
    from reference_models.vision import prefetch

    monkeypatch.setattr(prefetch.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(prefetch.torch.cuda, "Stream", lambda device: ("stream", device))
    pipeline = DeviceBatches(lambda batch, slot: (batch, None), torch.device("cuda"))
    assert pipeline.device == torch.device("cuda", 0) and pipeline.streams == [("stream", torch.device("cuda", 0))]
