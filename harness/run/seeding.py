"""Seeds: the master seed of a run, the per-rank and shared seeds derived from it, and every generator's state
put back after work that must not move the run's draws (harness/run/warmup.py)."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

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


def random_states() -> tuple[Any, ...]:
    """Every generator a run draws from (Python's, numpy's, torch's on the host and on each CUDA device), to
    put back with `restore_random_states` after work that must leave the run's draws as they were."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda


def restore_random_states(states: tuple[Any, ...]) -> None:
    py, numpy_state, host, cuda = states
    random.setstate(py)
    np.random.set_state(numpy_state)
    torch.set_rng_state(host)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
