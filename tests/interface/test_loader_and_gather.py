"""The shared data and evaluation pieces: loaders that shard and seed alike on every run, and a metric
computed once on rank 0 over every rank's predictions."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import Dataset

from harness.interface import RunContext
from harness.interface.gather import score_on_main, sum_over_ranks
from harness.interface.loader import make_loader


class Draws(Dataset):
    """Item i with a random draw made in the loading process: shows which generator served it."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        return torch.tensor([i, random.randrange(10**6)])


def _ctx(rank: int, world: int, seed: int) -> RunContext:
    return RunContext(cfg=None, data_dir=None, device=torch.device("cpu"), rank=rank,
                      world_size=world, seed=seed + rank, shared_seed=seed)


def _epoch(rank: int, world: int, seed: int, workers: int, epoch: int = 1) -> torch.Tensor:
    loader = make_loader(Draws(), _ctx(rank, world, seed), batch_size=2, workers=workers)
    return torch.cat(list(loader.epoch(epoch)))


def test_ranks_read_disjoint_shards_that_cover_the_epoch():
    parts = [_epoch(r, 2, seed=7, workers=0)[:, 0] for r in range(2)]
    assert sorted(torch.cat(parts).tolist()) == list(range(16))
    assert not set(parts[0].tolist()) & set(parts[1].tolist())


def test_workers_draw_from_seeds_derived_from_the_run_seed():
    a, b = _epoch(0, 1, seed=3, workers=2), _epoch(0, 1, seed=3, workers=2)
    assert torch.equal(a, b)  # the same run seed: the same order and the same augmentation draws
    assert not torch.equal(a[:, 1], _epoch(0, 1, seed=4, workers=2)[:, 1])
    draws = a[:, 1].tolist()
    assert len(set(draws)) == len(draws)  # two workers do not repeat each other's draws
    assert not torch.equal(a[:, 0], _epoch(0, 1, seed=3, workers=2, epoch=2)[:, 0])  # a new order per epoch


def _rank(rank: int, world: int, init: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    mine = [(i, f"sentence {i}") for i in range(rank, 9, world)]  # strided shards, out of order
    calls = []
    joined = score_on_main(mine, lambda items: calls.append(len(items)) or " | ".join(t for _, t in sorted(items)))
    hits = sum_over_ranks(torch.tensor([len(mine)]))
    Path(f"{out}.{rank}").write_text(f"{joined}\n{hits.item()}\n{calls}")
    dist.destroy_process_group()


@pytest.mark.e2e  # two spawned gloo ranks
def test_a_metric_is_computed_once_over_every_rank_and_broadcast(tmp_path):
    mp.spawn(_rank, args=(2, str(tmp_path / "init"), str(tmp_path / "out")), nprocs=2)
    whole = " | ".join(f"sentence {i}" for i in range(9))
    rank0, rank1 = ((tmp_path / f"out.{r}").read_text().splitlines() for r in range(2))
    assert rank0 == [whole, "9", "[9]"]  # rank 0 scored all 9 items, once
    assert rank1 == [whole, "9", "[]"]  # rank 1 got the score without computing it


def test_closing_a_loader_stops_its_persistent_workers_and_a_later_epoch_starts_them_again():
    """pipeline_bench.py closes the loaders once its figures are out, so the process ends at once."""
    loader = make_loader(Draws(), _ctx(0, 1, 5), batch_size=2, workers=2)
    batches = iter(loader.epoch(1))
    first = next(batches)
    workers = list(loader.loader._iterator._workers)
    assert all(w.is_alive() for w in workers)
    loader.close()
    assert not any(w.is_alive() for w in workers)
    loader.close()  # closing twice, or a loader never iterated, does nothing
    again = torch.cat(list(loader.epoch(1)))  # new workers, the same epoch's order of samples
    assert len(again) == 16 and torch.equal(again[:2, 0], first[:, 0])

