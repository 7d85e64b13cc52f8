"""Seeds: the master seed of a run, and the per-rank and shared seeds derived from it."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass

import numpy as np
import torch

SEED_BITS = 31  # MLPerf logs seeds as JSON integers; numpy's legacy seeding takes < 2**32


def draw_seed() -> int:
    """A master seed from the OS entropy pool, as MLPerf's closed rules want (not hand-picked)."""
    return int.from_bytes(os.urandom(4), "little") % (2**SEED_BITS)


@dataclass(frozen=True)
class RankSeeds:
    master: int
    rank: int  # this rank's own stream: dropout masks and other per-rank randomness
    shared: int  # identical on every rank: data order, negatives, anything ranks must agree on


def derive(master: int, rank: int, world_size: int) -> RankSeeds:
    """Per-rank seeds from the master seed, drawn the way MLPerf's GNMT reference draws them: one
    generator seeded with the master seed yields the list of worker seeds, then the shared seed."""
    gen = random.Random(master)
    worker_seeds = [gen.randrange(2**SEED_BITS) for _ in range(world_size)]
    shared = gen.randrange(2**SEED_BITS)
    return RankSeeds(master=master, rank=worker_seeds[rank], shared=shared)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too
