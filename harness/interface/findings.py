"""What a model's loader dropped or repaired, counted for the run's record (result.json's data_findings).

Real datasets hold records the MLPerf references handle in passing (COCO's degenerate polygons and
crowd boxes, ImageNet's CMYK and PNG files named .JPEG). A model handles them as its reference does
and says how many there were through its optional `data_findings() -> dict[str, int]`: counts
known from the annotation files when the model is built, plus what the loader met in files as it
read them. The second kind is kept per sample in a byte array in shared memory (SampleFlags), which
the loader's worker processes write into, one byte per sample, so that a file counts once however
many epochs read it; at the end the ranks' arrays are merged (each rank read its own shards).

    flags = SampleFlags(len(samples), ("cmyk_to_rgb", "png_as_jpeg"))
    flags.mark(i, "cmyk_to_rgb")          # in a worker, or in the training process
    flags.counts()                       # {"cmyk_to_rgb": 3, "png_as_jpeg": 1}, over every rank

DataReport is what `python -m harness.check_data` collects about a dataset folder: the model's
check (MLPerfTask.check) fills it without training. `describe_command` is the quicker look a model's
data module gives from the command line (`python -m reference_models.gnmt.data DATA_DIR`): the folder
read as the model reads it, in one line, or its DataError in one line.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, TypeVar

import torch
import torch.distributed as dist

from harness.interface.contract import DataError
from harness.interface.workers import SharedMemoryShort

T = TypeVar("T")


class SampleFlags:
    """Up to 8 named flags per sample, shared with the DataLoader's worker processes."""

    def __init__(self, n: int, names: Sequence[str]):
        if len(names) > 8:
            raise ValueError("at most 8 flags fit a byte")
        self.names = tuple(names)
        # shared before the workers start: forked workers map the same pages, spawned ones receive a
        # handle to them (torch.multiprocessing's reductions), so the training process sees their marks
        self.flags = torch.zeros(max(n, 1), dtype=torch.uint8)
        self._owner = os.getpid()
        self._unshared: Optional[str] = None
        try:
            self.flags.share_memory_()
        except RuntimeError as err:  # /dev/shm too small or read-only: a run without workers needs none
            self._unshared = str(err)

    def mark(self, index: int, name: str) -> None:
        """Set one flag of sample `index`. Each sample is read by one process at a time, and a flag
        once set stays set, so the byte needs no lock."""
        if self._unshared is not None and os.getpid() != self._owner:  # a worker's mark would be lost
            raise SharedMemoryShort(self._unshared)
        self.flags[index] |= 1 << self.names.index(name)

    def counts(self) -> dict[str, int]:
        """{flag: samples that have it}, merged over the ranks when several run (every rank must call
        this at the same point: it is a collective)."""
        bits = torch.stack([(self.flags >> i) & 1 for i in range(len(self.names))]) if self.names else \
            torch.zeros((0, len(self.flags)), dtype=torch.uint8)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" \
                else torch.device("cpu")
            merged = bits.to(device)
            dist.all_reduce(merged, op=dist.ReduceOp.MAX)  # sync point: a sample any rank flagged counts once
            bits = merged.cpu()
        return {name: int(bits[i].sum()) for i, name in enumerate(self.names)}


@dataclass
class DataReport:
    """What a dataset check found (python -m harness.check_data): what was checked, what the loader
    will drop or convert as the reference does (notes), and each problem that stops training."""

    facts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def can_train(self) -> bool:
        return not self.problems

    def attempt(self, step: Callable[..., T], *args: Any, **kwargs: Any) -> Optional[T]:
        """step(*args, **kwargs), or None with its DataError kept as a problem."""
        try:
            return step(*args, **kwargs)
        except DataError as err:
            self.problems.append(str(err))
            return None

    def counted(self, where: str, counts: dict[str, int], meaning: dict[str, str]) -> None:
        """A note for each non-zero count: '<where>: <n> <meaning of the key>'."""
        for key, n in counts.items():
            if n:
                self.notes.append(f"{where}: {n:,} {meaning.get(key, key.replace('_', ' '))}")


def describe_command(usage: str, describe: Callable[[str], str], argv: Optional[Sequence[str]] = None) -> None:
    """Print `describe(folder)` for the one folder on the command line; exit 1 with the usage, or with
    the DataError reading it raised, in one line."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit(f"usage: {usage}")
    try:
        print(describe(args[0]))
    except DataError as err:
        sys.exit(f"error: {err}")
