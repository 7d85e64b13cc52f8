"""Two datasets' items drawn with the same random state, index by index: a CPU transform and the
GPU path's (or two packings) compared on the same flips, crops and jitter."""
from __future__ import annotations

import random
from typing import Any, Sequence

import torch


def seeded_pairs(first: Sequence[Any], second: Sequence[Any]) -> tuple[list, list]:
    """([first[i]], [second[i]]) for every i, Python's and torch's generators seeded with i before each."""
    a, b = [], []
    for i in range(len(first)):
        for items, source in ((a, first), (b, second)):
            random.seed(i)
            torch.manual_seed(i)
            items.append(source[i])
    return a, b
