"""The normalisation of a batch's pixels, as the affine crop_resize applies in its last pass.

    python -c "from reference_models.vision.normalize import normalization; print(normalization([0.5] * 3, [0.25] * 3, 'cpu'))"
"""
from __future__ import annotations

from typing import Sequence

import torch


def normalization(mean: Sequence[float], std: Sequence[float], device: torch.device,
                  scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(1 / (scale std), -mean / std), (1, 3, 1, 1) each: crop_resize's `affine` for (x / scale - mean) / std."""
    m = torch.tensor(mean, dtype=torch.float64).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(1, 3, 1, 1)
    return (1 / (scale * s)).float().to(device), (-m / s).float().to(device)
