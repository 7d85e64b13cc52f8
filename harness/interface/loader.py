"""A DataLoader for models that read samples from files (images, COCO), the same way for all of them.

    loader = make_loader(dataset, ctx, batch_size=hp.batch_size, workers=hp.workers, shuffle=True)
    for batch in loader.epoch(epoch): ...

- Each rank reads its shard of a per-epoch permutation drawn from the run's shared seed
  (DistributedSampler; the same permutation on every rank, so the shards never overlap).
- Each worker process seeds Python's and NumPy's generators from torch's seed for it, which the
  loader derives from this rank's seed and the worker id: augmentations differ between workers and
  ranks, and repeat exactly for the same run seed. Without workers, the main process's generators
  (seeded by the harness from the rank seed) are used.
- Pinned memory on CUDA (faster host-to-device copies), persistent workers (no re-spawn per epoch:
  each worker's generators run on across epochs, and batches go to workers in a fixed order).

    evaluation = make_shard_loader(val_set, ctx, batch_size=256, workers=hp.workers)

reads this rank's contiguous shard of an evaluation set in order, every sample exactly once (a
DistributedSampler pads shards to equal length, which would count some samples twice), so that
counts summed over ranks (gather.sum_over_ranks) equal what one rank counts.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from harness.interface.contract import RunContext
from harness.interface.sharding import shard_range


def seed_worker(worker_id: int) -> None:
    """DataLoader's worker_init_fn: torch seeded this worker from the loader's generator + worker id."""
    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    np.random.seed(seed)


class RankLoader:
    """This rank's DataLoader over a dataset, one `epoch(e)` iterator per epoch."""

    def __init__(self, dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0, shuffle: bool = True,
                 drop_last: bool = True, collate: Optional[Callable[[list], Any]] = None, prefetch: int = 2):
        self.sampler: DistributedSampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=shuffle,
                                          seed=ctx.shared_seed, drop_last=drop_last)
        self.loader = DataLoader(
            dataset, batch_size=batch_size, sampler=self.sampler, num_workers=workers, collate_fn=collate,
            pin_memory=ctx.device.type == "cuda", drop_last=drop_last,
            worker_init_fn=seed_worker if workers else None,
            generator=torch.Generator().manual_seed(ctx.seed),  # the workers' base seed: per rank
            persistent_workers=workers > 0, prefetch_factor=prefetch if workers else None,
        )

    def __len__(self) -> int:
        return len(self.loader)

    def epoch(self, epoch: int) -> Iterator[Any]:
        """The batches of one epoch (1-based), in this epoch's order."""
        self.sampler.set_epoch(epoch)
        return iter(self.loader)


def make_loader(dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0, shuffle: bool = True,
                drop_last: bool = True, collate: Optional[Callable[[list], Any]] = None) -> RankLoader:
    return RankLoader(dataset, ctx, batch_size=batch_size, workers=workers, shuffle=shuffle, drop_last=drop_last,
                      collate=collate)


def make_shard_loader(dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0,
                      collate: Optional[Callable[[list], Any]] = None) -> DataLoader:
    """This rank's contiguous shard of `dataset`, in order, each sample once (for evaluation)."""
    part = Subset(dataset, shard_range(len(dataset), ctx.rank, ctx.world_size))  # type: ignore[arg-type]
    return DataLoader(part, batch_size=batch_size, shuffle=False, num_workers=workers, collate_fn=collate,
                      pin_memory=ctx.device.type == "cuda", worker_init_fn=seed_worker if workers else None,
                      generator=torch.Generator().manual_seed(ctx.seed), persistent_workers=workers > 0)
