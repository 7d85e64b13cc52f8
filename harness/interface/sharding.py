"""Which part of a global batch or an evaluation set is this rank's.

One rule for every model: a contiguous, balanced split (the first `len % world` ranks take one
more), as torch.tensor_split makes it. With one rank, the whole thing.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def bounds(n: int, rank: int, world_size: int) -> tuple[int, int]:
    """[start, stop) of rank's part of n items."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of {world_size}")
    base, extra = divmod(n, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def shard(items: T, rank: int, world_size: int) -> T:
    """This rank's contiguous part of a sequence, a numpy array or a tensor (sliced, not copied)."""
    if world_size == 1:
        return items
    start, stop = bounds(len(items), rank, world_size)  # type: ignore[arg-type]
    return items[start:stop]  # type: ignore[index]


def shard_range(n: int, rank: int, world_size: int) -> range:
    start, stop = bounds(n, rank, world_size)
    return range(start, stop)


def sizes(n: int, world_size: int) -> Sequence[int]:
    return [b - a for a, b in (bounds(n, r, world_size) for r in range(world_size))]
