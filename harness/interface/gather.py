"""Evaluation over several ranks: each rank scores its shard, rank 0 computes the metric, all get it.

    quality = gather.score_on_main(my_predictions, compute_bleu)   # the same value on every rank

`score_on_main` gathers every rank's list of picklable items to rank 0 (in rank order), calls
`score` there once on the concatenation, and broadcasts the result, so that a metric that is not a
sum (BLEU, COCO mAP) is computed once over the whole evaluation set, exactly as one rank would.
`sum_over_ranks` adds counts (hits, correct predictions) in place; `broadcast_buffers` gives every rank
rank 0's batch-norm statistics before an evaluation. With one rank all are plain calls.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_to_main(items: Sequence[T]) -> list[T] | None:
    """Every rank's items, concatenated in rank order, on rank 0; None on the other ranks."""
    if not _distributed():
        return list(items)
    parts: list[Any] = [None] * dist.get_world_size() if dist.get_rank() == 0 else None  # type: ignore[assignment]
    dist.gather_object(list(items), parts, dst=0)  # sync point: every rank hands in its shard
    if dist.get_rank() != 0:
        return None
    return [x for part in parts for x in part]


def broadcast_from_main(value: T) -> T:
    """Rank 0's value on every rank."""
    if not _distributed():
        return value
    box = [value if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)  # sync point: every rank waits for rank 0's score
    return box[0]  # type: ignore[return-value]


def score_on_main(items: Sequence[T], score: Callable[[list[T]], Any]) -> Any:
    """score(all ranks' items) computed on rank 0, returned on every rank."""
    everything = gather_to_main(items)
    result = score(everything) if everything is not None else None
    return broadcast_from_main(result)


def sum_over_ranks(tensor: torch.Tensor) -> torch.Tensor:
    """The element-wise sum over ranks, in place (integer counts stay exact)."""
    if _distributed():
        dist.all_reduce(tensor)  # sync point
    return tensor


def broadcast_buffers(module: torch.nn.Module) -> None:
    """Rank 0's buffers (batch-norm running statistics) on every rank, before an evaluation that every
    rank shares: each rank's statistics drift apart with its own batches between DDP's broadcasts."""
    if _distributed():
        for buffer in module.buffers():
            dist.broadcast(buffer, src=0)  # sync point
