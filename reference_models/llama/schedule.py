"""The learning-rate schedule of the Llama models: a linear warm-up, then a cosine down to a floor. Llama 3.1 8B
runs NeMo's (warm-up 512, floor 0.1 x peak); Llama 2 70B LoRA Hugging Face's cosine without warm-up to 0, which
is the same formula with warmup=0 and end_factor=0.

    python -c "from reference_models.llama.schedule import cosine_with_warmup; print(cosine_with_warmup(2, 10, 0.1)(5))"
"""
from __future__ import annotations

import math
from typing import Callable


def cosine_with_warmup(warmup: int, total: int, end_factor: float) -> Callable[[int], float]:
    """The rate's factor at each step: linear from 1/warmup to 1 over `warmup` steps, then a cosine down to
    end_factor at `total` steps (NeMo's CosineAnnealing with min_lr = end_factor x max_lr), flat after."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return end_factor + (1 - end_factor) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor
