"""Two datasets' items drawn with the same random state, index by index: a CPU transform and the
GPU path's (or two packings) compared on the same flips, crops and jitter."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

import torch

from reference_models.detection.generate import GeneratorSpec, write

JITTER = (0.125, 0.5, 0.5, 0.05)  # brightness, contrast, saturation, hue: the references' colour jitter


def small_coco(tmp_path_factory) -> Path:
    """A COCO folder of ten training and two validation images of 90-140 px, two to four objects each."""
    root = tmp_path_factory.mktemp("coco") / "coco"
    write(root, GeneratorSpec(train_images=10, val_images=2, min_side=90, max_side=140, min_objects=2, max_objects=4))
    return root


def seeded_pairs(first: Sequence[Any], second: Sequence[Any]) -> tuple[list, list]:
    """([first[i]], [second[i]]) for every i, Python's and torch's generators seeded with i before each."""
    a, b = [], []
    for i in range(len(first)):
        for items, source in ((a, first), (b, second)):
            random.seed(i)
            torch.manual_seed(i)
            items.append(source[i])
    return a, b
