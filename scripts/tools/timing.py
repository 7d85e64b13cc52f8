"""How the plain baselines time training steps: --warmup steps left out, then --repeats windows of
--steps steps, each between two device synchronisations; a window's figure is what its steps
processed (images, sequences, tokens) per second, and a tool reports every window and their median.
Used by plain_bert.py, plain_loop.py, resnet_baseline.py, transformer_baseline.py and
detection_baseline.py beside it (each run as a script, so this folder is on its sys.path).

    python -c "import sys; sys.path.insert(0, 'scripts/tools'); import timing, torch; \\
        print(timing.timed_windows(lambda: 8, torch.device('cpu'), warmup=1, steps=4, repeats=3))"
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import torch


def add_window_arguments(parser: argparse.ArgumentParser, *, warmup: int, steps: int, repeats: int) -> None:
    """--warmup, --steps and --repeats with this tool's defaults."""
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--repeats", type=int, default=repeats)


def timed_windows(step: Callable[[], int], device: torch.device, *, warmup: int, steps: int, repeats: int) -> list[float]:
    """Each window's count per second: `step` trains one step and returns how many it processed."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        step()
    rates = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        counted = sum(step() for _ in range(steps))
        sync()
        rates.append(counted / (time.perf_counter() - t0))
    return rates
