"""A spread of convergence figures as a reader takes it in: the runs at each value while there are few
values, else a summary: median, range, runs and a small histogram.

Epochs to converge take a few values (`4:9 5:1`, epochs:runs), and the report lists them. Convergence
counted in samples or steps (BERT, llama2_70b_lora, stable diffusion) takes a different value in almost
every run: a list of ten seven-digit sample counts reads as noise, so it is summarised instead:

    4:9 5:1
    median 3.45M (3.20M-3.70M), 10 runs ▂▅█▃▁▁▂▁

The histogram has eight bins from the least to the most, one block character per bin, its height the
bin's share of the runs relative to the fullest bin.

    python -c "from harness.results.report.distribution import summary; print(summary({'3200000': 1, '3450000': 2}))"
"""
from __future__ import annotations

import statistics
from typing import Mapping

LISTED = 6  # distinct values up to which each is listed with its runs
BINS = 8
BLOCKS = "▁▂▃▄▅▆▇█"


def number(x: float) -> str:
    """3448344 -> '3.45M', 23500 -> '23.5k', 4 -> '4', 0.75 -> '0.75'."""
    if abs(x) >= 1e6:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.3g}k"
    return f"{x:g}"


def values(counts: Mapping[str, int]) -> list[float]:
    """Every run's figure, from {figure: runs}."""
    return sorted(float(k) for k, n in counts.items() for _ in range(n))


def histogram(xs: list[float], bins: int = BINS) -> str:
    """Eight block characters, one per equal-width bin from min to max."""
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return BLOCKS[-1]
    tally = [0] * bins
    for x in xs:
        tally[min(bins - 1, int((x - lo) / (hi - lo) * bins))] += 1
    top = max(tally)
    return "".join(" " if n == 0 else BLOCKS[max(0, round(n / top * (len(BLOCKS) - 1)))] for n in tally)


def summary(counts: Mapping[str, int], listed: int = LISTED) -> str:
    """'4:9 5:1' for a few distinct values, else 'median 3.45M (3.20M-3.70M), 10 runs ▂▅█▃▁▁▂▁'; 'n/a'
    without runs."""
    if not counts:
        return "n/a"
    if len(counts) <= listed:
        return " ".join(f"{k}:{v}" for k, v in counts.items())
    xs = values(counts)
    return (f"median {number(statistics.median(xs))} ({number(xs[0])}-{number(xs[-1])}), {len(xs)} runs "
            f"{histogram(xs)}")
