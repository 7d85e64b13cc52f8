"""The harness's side of a model's batches: moving them to the device, and keeping the next one coming.

    python -m harness.train model=resnet seed=1    # on CUDA: pinned batches, copied on a side stream

A model yields host batches (train_batches); `to_device` moves one as the contract says: a tensor, a
tuple, list or dict of them (recursively), or an object with its own `to(device)` (GNMT's Batch, which
keeps its lengths on the host for cuDNN; Mask R-CNN's PackedBatch, four copies whose views are the
model's lists); anything else stays as it is. This is PyTorch Lightning's `move_data_to_device` rule,
written out for the three shapes the models use. Such an object is pinned where a tensor would be, by
the DataLoader's pin thread through its own `pin_memory()`.

`Feed.batches` hands the loop (batch, device_wait) pairs:

- on a CPU the batches as yielded: there is nothing to copy, and device_wait is None;
- on CUDA the next batch is copied with non_blocking=True on a copy stream of its own while the
  current one trains (NVIDIA's data prefetcher, as DeepLearningExamples' image models use it); before
  a step the compute stream waits for its batch's copy. Three CUDA events on the compute stream frame
  the hand-over (hooks.DeviceWait): where the loop asked for the batch, after the wait for its copy,
  and where the step may start. harness/observe/datawait.py reads them at the epoch's end: the time
  from the first to the last is how long the GPU stood idle for this batch, which a host that runs
  ahead of the GPU (a compiled or graphed step) does not see. The copied tensors are marked as used
  by the compute stream, so the allocator does not hand their memory to the next copy too early. No
  host sync anywhere.

At most `limit` batches are taken from the iterator, so a cut-short epoch (a warm-up, a throughput
window) draws no batch it will not train on.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Optional

import torch

from harness.interface.batches import tensors
from harness.observe.hooks import DeviceWait


def to_device(batch: Any, device: torch.device, non_blocking: bool = False) -> Any:
    """`batch` on `device` (see the module docstring for what moves and how)."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple keeps its type
        return type(batch)(*(to_device(x, device, non_blocking) for x in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(x, device, non_blocking) for x in batch)
    if isinstance(batch, dict):
        return {k: to_device(v, device, non_blocking) for k, v in batch.items()}
    mover = getattr(batch, "to", None)
    if callable(mover):
        return mover(device)
    return batch


class Feed:
    """This rank's batches on its device."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self._stream = torch.cuda.Stream(device) if self.cuda else None

    def once(self, batch: Any) -> Any:
        """A batch moved now, to be used again and again (mode=throughput's synthetic batch)."""
        return to_device(batch, self.device) if self.cuda else batch

    def batches(self, source: Iterable[Any], limit: Optional[int] = None) -> Iterator[tuple[Any, Any]]:
        """(batch on the device, the CUDA events around its hand-over, or None), at most `limit`."""
        host = itertools.islice(source, limit)
        if not self.cuda:
            for batch in host:
                yield batch, None
            return
        compute = torch.cuda.current_stream(self.device)
        asked = _event(compute)  # the first batch: its wait is the loaders' start-up
        ahead = self._copy(next(host, _END))
        while ahead is not _END:
            batch = ahead
            compute.wait_stream(self._stream)  # type: ignore[arg-type]  # waits for this batch's copy: no host sync
            copied = _event(compute)
            for t in tensors(batch):
                if t.device.type == "cuda":
                    t.record_stream(compute)  # its memory is the compute stream's until that is done with it
            ahead = self._copy(next(host, _END))  # the next batch's copy overlaps this step
            yield batch, DeviceWait(asked, copied, _event(compute))
            asked = _event(compute)  # the loop asks again: the step and its hooks are queued

    def _copy(self, batch: Any) -> Any:
        if batch is _END:
            return _END
        assert self._stream is not None  # CUDA only
        with torch.cuda.stream(self._stream):
            return to_device(batch, self.device, non_blocking=True)


def _event(stream: torch.cuda.Stream) -> torch.cuda.Event:
    event = torch.cuda.Event(enable_timing=True)
    event.record(stream)
    return event


_END = object()
