"""Batches whose samples share a group (images of one aspect ratio), the same on every rank for a seed.

    groups = aspect_ratio_groups(sizes)                     # (height, width) per sample, from annotations
    loader = make_loader(dataset, ctx, batch_size=hp.batch_size, groups=groups, drop_last=False)

The rule is maskrcnn-benchmark's GroupedBatchSampler (MLPerf Training's object_detection reference,
DATALOADER.ASPECT_RATIO_GROUPING): take the epoch's shuffled index stream, split each group's samples
in stream order into batches, and order the batches by where their first sample stands in the stream.
Where the reference groups each rank's own shard (its epochs are counted in iterations, so ranks
need not agree on a pass's length), here the batches are global batches of batch_size x world_size
cut from the one stream every rank draws (the shared seed and the epoch, as DistributedSampler
draws it), and a rank takes every world_size-th sample of each, as DistributedSampler deals them
out: all ranks take the same number of steps, in the same group at each step, their shares disjoint.
With a single group the batches are exactly those of DistributedSampler with DataLoader batches.

A group's last global batch, short of batch_size x world_size: drop_last=True leaves it out;
drop_last=False keeps it, as the reference keeps uneven batches (drop_uneven=False in training),
completed to a multiple of world_size with the group's first samples of the epoch (DistributedSampler
pads its shards the same way), so that every rank has a share of it. The epoch's step count follows
from the group sizes alone (`__len__`), not from the draw.

An evaluation set is batched by the same rule without shuffling (one rank's order, whole batches
per rank: reference_models/detection/cocoeval.my_batches), as the reference batches its test images.

Written here rather than taken from torchvision's detection reference: that one is a script, not a
library module, and it completes short batches by repeating samples to keep len(sampler) // batch_size
batches, which is not the MLPerf reference's rule.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterator, Sequence

import torch
from torch.utils.data import Sampler

LANDSCAPE, PORTRAIT = 0, 1


def aspect_ratio_groups(sizes: Sequence[tuple[int, int]]) -> list[int]:
    """The reference's two groups from each sample's (height, width): LANDSCAPE where height / width < 1,
    PORTRAIT otherwise (square images with the portrait ones: bisect_right of the ratio in bins [1])."""
    return [PORTRAIT if h >= w else LANDSCAPE for h, w in sizes]


class GroupedBatchSampler(Sampler[list[int]]):
    """This rank's share of each global batch of one group; `set_epoch(e)` before each epoch's pass."""

    def __init__(self, groups: Sequence[int], batch_size: int, *, rank: int, world_size: int, seed: int,
                 shuffle: bool = True, drop_last: bool = True):
        if not len(groups):
            raise ValueError("no samples to batch")
        if batch_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"batch_size {batch_size}, rank {rank} of {world_size}: a batch of at least one "
                             "sample and a rank in the world")
        self.groups = [int(g) for g in groups]
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.seed, self.shuffle, self.drop_last = seed, shuffle, drop_last
        self.epoch = 0
        per = batch_size * world_size
        counts: dict[int, int] = defaultdict(int)
        for g in self.groups:
            counts[g] += 1
        self.sizes = dict(sorted(counts.items()))  # samples per group
        self._len = sum(n // per + (not drop_last and n % per > 0) for n in self.sizes.values())

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def stream(self) -> list[int]:
        """The epoch's index stream: DistributedSampler's permutation for this seed and epoch."""
        n = len(self.groups)
        if not self.shuffle:
            return list(range(n))
        return torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()

    def global_batches(self) -> list[list[int]]:
        """Every rank's samples of each step, in step order (the same list on every rank)."""
        stream, per, world = self.stream(), self.batch_size * self.world_size, self.world_size
        members: dict[int, list[int]] = {g: [] for g in self.sizes}
        for index in stream:
            members[self.groups[index]].append(index)
        position = {index: at for at, index in enumerate(stream)}
        batches = []
        for group in members.values():
            for start in range(0, len(group), per):
                batch = group[start: start + per]
                if len(batch) < per:
                    if self.drop_last:
                        continue
                    short = -len(batch) % world
                    batch = batch + [group[i % len(group)] for i in range(short)]
                batches.append(batch)
        batches.sort(key=lambda b: position[b[0]])
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield batch[self.rank:: self.world_size]

    def __len__(self) -> int:
        return self._len
