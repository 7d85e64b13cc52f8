"""Batches prepared on the device ahead of the training step, by one thread or several side by side.

    python -m harness.train model=resnet dataset=imagenet model.decode=nvimgcodec model.decode_threads=2

`DeviceBatches` runs a model's `prepare(batch, slot)` (decode.py: decode the JPEGs, crop, resize and
normalise on the GPU) on the loader's batches in threads of the training process, each under its own
CUDA stream, and hands the results to the step in the loader's order: thread t of N prepares batches
t, t + N, t + 2N, ... (it takes batch k from the loader only once batch k - 1 is taken), and the
consumer takes batch k from thread k mod N, so the run sees the same batches in the same order
whatever N is. Each thread has its own `prepare` (its own decoder: an nvImageCodec Decoder is not
to be shared between threads, nvImageCodec's "Thread Safety" note), its own side stream, its own
buffer slots and its own queue, `depth` batches ahead over all threads.

Why several: one thread's host time bounds the pipeline. On one H200 the single thread spent 44 ms
of host time per batch of 256 beside the compiled ResNet-50 step, with CUDA graphs too (where the
training thread needs almost no host time), against 21 ms when the loader ran alone: 5,800 images/s
at most, whatever the step does (docs/benchmarks/pipeline_2026-12-01.md). The profile points to the
per-image work inside nvImageCodec's decode call (a copy of each file to the device, an event
synchronisation and a colour-conversion kernel per image), which waits behind the step's kernels:
those kernels run on nvJPEG's own streams, some of which share one of the GPU's hardware work queues
with the step's stream (docs/benchmarks/gpu_check_2026-12-06.md, its last section), so a priority
of this module's streams does not reach them; the call releases the GIL while it waits, so threads
can overlap those waits. What N gives is
measured by scripts/lab/pipeline_h200.sh (stages resnet:nvimgcodec1, 2 and 3).

Behaviour, the same for any N: a failure in any thread (the loader's error, a decode error) reaches
the training thread when it comes to that batch, after every batch before it; a consumer that stops
early (max_steps, an interrupted epoch, Ctrl-C in the training thread) or an epoch's end stops every
thread and joins it before the generator returns; what a batch's queued GPU work still reads (the
pinned file bytes) is released only once that work is done.
"""
from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Sequence, Union

import torch

from harness.interface.batches import tensors as batch_tensors

log = logging.getLogger("harness.decode")
Prepare = Callable[[Any, int], tuple[Any, Any]]  # (batch, slot) -> (tensors for the step, what its GPU work reads)


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


_END = object()


class _Turns:
    """The loader's batches handed out in their order: `take(k)` waits until batch k - 1 has been
    taken, then takes batch k. One thread at a time calls next() on the loader's iterator (a
    DataLoader iterator, like any generator, must not be advanced from two threads at once)."""

    def __init__(self, batches: Iterator[Any], stop: threading.Event):
        self._batches, self._stop = batches, stop
        self._next = 0
        self._over = False  # the loader is exhausted or failed: no batch k comes any more
        self._turn = threading.Condition()

    def take(self, k: int) -> tuple[bool, Any, float]:
        """(True, batch k, seconds waited for the loader), or (False, None, 0) at the epoch's end or a stop;
        the loader's error is raised (and ends every other thread's turn)."""
        with self._turn:
            while self._next != k and not self._over and not self._stop.is_set():
                self._turn.wait(0.1)
            if self._over or self._stop.is_set():
                return False, None, 0.0
        t0 = time.perf_counter()
        try:
            batch = next(self._batches)  # only the thread whose turn it is gets here
        except StopIteration:
            self._end()
            return False, None, 0.0
        except BaseException:
            self._end()
            raise
        waited = time.perf_counter() - t0
        with self._turn:
            self._next += 1
            self._turn.notify_all()
        return True, batch, waited

    def _end(self) -> None:
        with self._turn:
            self._over = True
            self._turn.notify_all()


class DeviceBatches:
    """Turns a loader's batches into what `prepare(batch, slot) -> (tensors, keep)` makes of them on
    the device, `depth` batches ahead of the consumer. `prepare` is one callable (one thread, as the
    SSD and Mask R-CNN paths use it) or a sequence of them, one per thread; each runs under its own
    side CUDA stream and is given slot numbers of its own (a slot's buffers are reused only once the
    batch that last used them is finished on the GPU). `keep` is held until the batch's GPU work is done."""

    def __init__(self, prepare: Union[Prepare, Sequence[Prepare]], device: torch.device, depth: int = 3):
        self.prepares: list[Prepare] = [prepare] if callable(prepare) else list(prepare)
        if not self.prepares:
            raise ValueError("DeviceBatches needs at least one prepare function (one per thread)")
        if device.type == "cuda" and device.index is None:  # torch.cuda.set_device wants an index, not "cuda"
            device = torch.device("cuda", torch.cuda.current_device())
        self.device, self.depth = device, depth
        self.threads = len(self.prepares)
        self.ahead = max(1, -(-depth // self.threads))  # each thread's queue: depth batches ready over all of them
        cuda = device.type == "cuda"
        self.streams = [torch.cuda.Stream(device) if cuda else None for _ in self.prepares]
        # what the threads spent, summed over them (scripts/tools/pipeline_bench.py prints it per batch):
        # waiting for the workers' batches, preparing on the host (queueing the GPU work), and the
        # side streams' GPU time
        self.stats = {"batches": 0, "loader_wait_s": 0.0, "prepare_s": 0.0, "gpu_s": 0.0}
        self._stats_lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        """`prepare`'s own host time of one stage (decode.ImageNetBatches: the decode call, the crops'
        launches, ...), summed into stats as `stage_<name>_s` beside prepare_s."""
        key = f"stage_{stage}_s"
        with self._stats_lock:
            self.stats[key] = self.stats.get(key, 0.0) + seconds

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        stop = threading.Event()
        turns = _Turns(iter(batches), stop)
        ready: list[queue.Queue] = [queue.Queue(maxsize=self.ahead) for _ in self.prepares]
        threads = [threading.Thread(target=self._produce, args=(t, turns, ready[t], stop), daemon=True,
                                    name=f"device-batches-{t}") for t in range(self.threads)]
        for thread in threads:
            thread.start()
        try:
            k = 0
            while True:
                item = ready[k % self.threads].get()  # batch k comes from thread k mod N: the loader's order
                k += 1
                if item is _END:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                tensors, event = item
                if event is not None:
                    current = torch.cuda.current_stream(self.device)
                    current.wait_event(event)  # the step's stream waits on the GPU, the host does not
                    for t in batch_tensors(tensors):
                        t.record_stream(current)  # made on a side stream, freed after the step's use
                yield tensors
        finally:
            stop.set()
            _stop_all(threads, ready)

    def _produce(self, lane: int, turns: _Turns, ready: queue.Queue, stop: threading.Event) -> None:
        prepare, stream = self.prepares[lane], self.streams[lane]
        pending: deque = deque()  # (begun, event, what the batch's GPU work still reads) of batches in flight
        slots = self.ahead + 2
        k, j = lane, 0  # the loader's batch number, this thread's count
        try:
            if stream is not None:
                torch.cuda.set_device(self.device)
            while True:
                took, batch, waited = turns.take(k)
                if not took:
                    break
                if stop.is_set():
                    return
                t1 = time.perf_counter()
                gpu = 0.0
                # a slot's buffers come back once the batch that used them is finished
                while len(pending) >= slots - 1:
                    begun, event, _ = pending.popleft()
                    if event is not None:
                        event.synchronize()  # releases the GIL while it waits
                        gpu += begun.elapsed_time(event) / 1e3
                with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                    begun = torch.cuda.Event(enable_timing=True) if stream is not None else None
                    if begun is not None:
                        begun.record()
                    tensors, keep = prepare(batch, lane * slots + j % slots)
                    event = torch.cuda.Event(enable_timing=True) if stream is not None else None
                    if event is not None:
                        event.record()
                pending.append((begun, event, keep))
                with self._stats_lock:
                    self.stats["loader_wait_s"] += waited
                    self.stats["prepare_s"] += time.perf_counter() - t1
                    self.stats["gpu_s"] += gpu
                    self.stats["batches"] += 1
                if not _put(ready, (tensors, event), stop):
                    return
                k += self.threads
                j += 1
            _put(ready, _END, stop)
        except BaseException as err:  # the consumer re-raises it in the training thread, at this batch
            _put(ready, _Failed(err), stop)
        finally:
            # what the batches still in flight read (pinned bytes that PyTorch's pinned-memory cache
            # would hand to the next epoch's batches) is released only once their GPU work is done
            for _, event, _ in pending:
                if event is not None:
                    event.synchronize()


STOP_S = 30.0  # how long closing the batches waits for the threads before it leaves them (daemons) behind


def _stop_all(threads: list[threading.Thread], ready: list[queue.Queue]) -> None:
    """Unblock the producers waiting for room and join them, for at most STOP_S seconds. At the
    interpreter's exit (a generator left open is closed by the last garbage collection) no other
    thread runs any more, so waiting for them would never end: the process would print its
    results and hang (docs/benchmarks/pipeline_2026-12-01.md, runs ended by `timeout`); they are
    daemons and end with it."""
    if sys.is_finalizing():
        return
    deadline = time.monotonic() + STOP_S
    while any(thread.is_alive() for thread in threads):
        if time.monotonic() > deadline:
            log.warning("%d decode thread(s) did not stop within %.0f s; left to end with the process",
                        sum(t.is_alive() for t in threads), STOP_S)
            return
        for q in ready:
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.02)
    for thread in threads:
        thread.join()


def _put(ready: queue.Queue, item: Any, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            ready.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
