"""NCF's epoch batches: the epoch permuted once and cut into contiguous slices gives every rank
exactly the batches that gathering each step's positions of the permutation gave (the order the
golden losses and the calibrated embedded target were made with)."""
from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from harness import registry
from harness.config import compose
from harness.interface import RunContext
from harness.interface.sharding import shard
from reference_models.ncf import data as ncf_data
from reference_models.ncf.benchmark import prepare


def _build(tmp_path, rank: int, world: int):
    cfg = compose(["model=ncf", "+debug=ncf", f"data_root={tmp_path}", "seed=1", "model.batch_size=300"])
    OmegaConf.resolve(cfg)
    root = prepare(cfg)
    return registry.get("ncf").build(RunContext(cfg=cfg, data_dir=root, device=torch.device("cpu"), rank=rank,
                                                world_size=world, seed=1 + rank, shared_seed=7))


def _gathered(bench, epoch_negatives_seed_state):
    """The previous implementation: each step gathers its positions of the epoch's permutation."""
    bench.generator.set_state(epoch_negatives_seed_state)
    n_pos, n_neg = bench.data.n_train, bench.hp.train_negatives
    neg_users = bench.train_users.repeat(n_neg)
    neg_items = ncf_data.sample_train_negatives(neg_users, bench.positive_keys, bench.data.n_items, bench.generator)
    users = torch.cat((bench.train_users, neg_users))
    items = torch.cat((bench.train_items, neg_items))
    labels = torch.zeros(users.numel())
    labels[:n_pos] = 1.0
    order = torch.randperm(users.numel(), generator=bench.generator)
    global_batch = bench.hp.batch_size * bench.world_size
    for start in range(0, users.numel(), global_batch):
        idx = order[start: start + global_batch]
        if idx.numel() < bench.world_size:
            break
        mine = shard(idx, bench.rank, bench.world_size)
        yield users[mine], items[mine], labels[mine]


@pytest.mark.parametrize("rank, world", [(0, 1), (1, 3)])
def test_sliced_epochs_are_the_gathered_batches(tmp_path, rank, world):
    bench = _build(tmp_path, rank, world)
    for epoch in (1, 2):
        state = bench.generator.get_state()
        ours = list(bench.train_batches(epoch))
        after = bench.generator.get_state()
        theirs = list(_gathered(bench, state))
        assert torch.equal(after, bench.generator.get_state())  # the same draws: the next epoch is unchanged too
        assert len(ours) == len(theirs) == -(-bench.train_samples() // (300 * world))
        for (u, i, y), (u2, i2, y2) in zip(ours, theirs):
            assert torch.equal(u, u2) and torch.equal(i, i2) and torch.equal(y, y2)
