"""Batches of one group each (harness.interface.grouping, through make_loader's groups=): the
reference's rule on one shared index stream, disjoint shares that cover the epoch on every rank, the
same batches for a seed and an epoch, and a step count that is the batches an epoch yields."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import torch
from torch.utils.data import BatchSampler, Dataset, DistributedSampler

from harness.interface import RunContext
from harness.interface.grouping import LANDSCAPE, PORTRAIT, GroupedBatchSampler, aspect_ratio_groups
from harness.interface.loader import make_loader, make_shard_loader


def _groups(n: int, seed: int = 0, kinds: int = 2) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(kinds) for _ in range(n)]


def _sampler(groups, batch, rank=0, world=1, seed=5, drop_last=False, epoch=1) -> GroupedBatchSampler:
    s = GroupedBatchSampler(groups, batch, rank=rank, world_size=world, seed=seed, drop_last=drop_last)
    s.set_epoch(epoch)
    return s


def test_aspect_groups_are_the_references_landscape_and_the_rest():
    # maskrcnn-benchmark: bisect_right([1], height / width): a square image goes with the portrait ones
    assert aspect_ratio_groups([(480, 640), (640, 480), (500, 500), (1, 2)]) == [LANDSCAPE, PORTRAIT, PORTRAIT,
                                                                                 LANDSCAPE]


@pytest.mark.parametrize("n,batch", [(53, 4), (40, 4), (7, 3), (1, 2)])
def test_one_rank_sees_every_sample_once_in_batches_of_one_group(n, batch):
    groups = _groups(n)
    s = _sampler(groups, batch)
    batches = list(s)
    assert len(batches) == len(s)
    assert sorted(i for b in batches for i in b) == list(range(n))  # the short last batches are kept
    assert all(len({groups[i] for i in b}) == 1 for b in batches)
    sizes = Counter(groups)
    assert len(s) == sum(-(-k // batch) for k in sizes.values())
    short = [b for b in batches if len(b) < batch]
    assert len(short) == sum(k % batch > 0 for k in sizes.values())  # at most one per group


def test_batches_follow_the_stream_as_the_reference_orders_them():
    groups = _groups(61, seed=3)
    s = _sampler(groups, 4)
    stream = s.stream()
    position = {index: at for at, index in enumerate(stream)}
    batches = list(s)
    firsts = [position[b[0]] for b in batches]
    assert firsts == sorted(firsts)  # batches ordered by their first sample's place in the stream
    for group in set(groups):  # each group's samples in stream order, cut into consecutive batches
        mine = [i for i in stream if groups[i] == group]
        assert [i for b in batches if groups[b[0]] == group for i in b] == mine


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_take_disjoint_shares_of_the_same_steps(world):
    groups = _groups(70, seed=1)
    batch = 3
    shares = [list(_sampler(groups, batch, rank=r, world=world)) for r in range(world)]
    assert len({len(s) for s in shares}) == 1  # every rank takes as many steps
    assert len(shares[0]) == len(_sampler(groups, batch, rank=0, world=world))
    for step in zip(*shares):
        assert len({groups[i] for part in step for i in part}) == 1  # one group per step, on every rank
        assert len({len(part) for part in step}) == 1
    seen = Counter(i for share in shares for b in share for i in b)
    assert set(seen) == set(range(70))
    # only a group's short last batch is completed (with the group's first samples), fewer than `world` repeats
    per_group = Counter(groups)
    repeats = sum(c - 1 for c in seen.values())
    assert repeats == sum(-(k % (batch * world)) % world for k in per_group.values())
    full = [b for share in shares for b in share if len(b) == batch]
    flat = [i for b in full for i in b]
    assert len(flat) == len(set(flat))  # the full batches of all ranks never overlap


def test_drop_last_keeps_only_full_global_batches():
    groups = _groups(70, seed=2)
    per_group = Counter(groups)
    for world in (1, 2):
        shares = [list(_sampler(groups, 4, rank=r, world=world, drop_last=True)) for r in range(world)]
        assert all(len(b) == 4 for share in shares for b in share)
        assert len(shares[0]) == sum(k // (4 * world) for k in per_group.values())
        flat = [i for share in shares for b in share for i in b]
        assert len(flat) == len(set(flat))


def test_the_same_seed_and_epoch_give_the_same_batches_and_a_resumed_epoch_its_own():
    groups = _groups(50)
    ran = _sampler(groups, 4, seed=9)
    by_epoch = {}
    for epoch in (1, 2, 3):
        ran.set_epoch(epoch)
        by_epoch[epoch] = list(ran)
    assert by_epoch[1] != by_epoch[2]
    assert list(_sampler(groups, 4, seed=9, epoch=3)) == by_epoch[3]  # a fresh loader resumed at epoch 3
    assert list(_sampler(groups, 4, seed=10, epoch=3)) != by_epoch[3]


class _Items(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


@pytest.mark.parametrize("world", [1, 2, 3])
def test_one_group_gives_the_ungrouped_loaders_batches(world):
    n, batch = 45, 4
    for rank in range(world):
        plain = DistributedSampler(_Items(n), num_replicas=world, rank=rank, shuffle=True, seed=5, drop_last=True)
        plain.set_epoch(2)
        want = list(BatchSampler(plain, batch, drop_last=True))
        assert list(_sampler([0] * n, batch, rank=rank, world=world, drop_last=True, epoch=2)) == want


def _ctx(rank: int, world: int) -> RunContext:
    return RunContext(cfg=None, data_dir=None, device=torch.device("cpu"), rank=rank,  # type: ignore[arg-type]
                      world_size=world, seed=rank, shared_seed=11)


@pytest.mark.parametrize("workers", [0, 1])
def test_make_loader_batches_by_group_with_a_step_count_that_is_exact(workers):
    n, groups = 29, _groups(29, seed=4)
    for rank in range(2):
        loader = make_loader(_Items(n), _ctx(rank, 2), batch_size=3, workers=workers, groups=groups, drop_last=False,
                             collate=list)
        for epoch in (1, 2):
            got = list(loader.epoch(epoch))
            assert len(got) == len(loader)
            assert got == list(_sampler(groups, 3, rank=rank, world=2, seed=11, epoch=epoch))


def test_group_ids_must_be_one_per_sample():
    with pytest.raises(ValueError, match="one per sample"):
        make_loader(_Items(5), _ctx(0, 1), batch_size=2, groups=[0, 1, 0])


@pytest.mark.parametrize("workers", [0, 1])
def test_an_evaluation_loader_reads_exactly_the_batches_it_is_given(workers):
    batches = [[0, 3], [1], [2, 4, 5, 6]]
    loader = make_shard_loader(_Items(7), _ctx(0, 1), batch_size=2, workers=workers, collate=list, batches=batches,
                               persistent=False)
    assert len(loader) == 3 and list(loader) == batches
