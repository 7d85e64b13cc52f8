"""The seed-variance view as the report shows it (harness.results.analysis.variance computes it): a row per
group and a line saying how much of its spread in time to train the epochs explain.

    python -m harness.report outputs/sweeps/X        # "Seed variance: ..." after the speedups
"""
from __future__ import annotations

from typing import Sequence

from harness.results.analysis.variance import SeedSpread
from harness.results.report.distribution import summary


def describe_spread(s: SeedSpread) -> str:
    """'epochs explain 100% of the variance of time to train; 4 epochs took 40 min on average, 7 epochs 70 min'."""
    if s.explained is None:
        return "too few converged runs"
    lo, hi = min(s.epochs, key=float), max(s.epochs, key=float)
    u = s.unit
    text = f"{'epochs' if u == 'epochs' else u + ' to converge'} explain {s.explained:.0%} of the variance of time to train"
    if lo != hi:
        text += (f"; {lo} {u} took {s.ttt_at_fewest:.4g} min on average, {hi} {u} "
                 f"{s.ttt_at_most:.4g} min")
    else:
        text += f"; every converged run needed {lo} {u}: the spread is throughput and the rest"
    if s.converged < s.runs:
        text += f"; {s.runs - s.converged} of {s.runs} runs did not converge"
    return text


def spread_rows(spreads: Sequence[SeedSpread]) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "platform", "world", "runs", "conv", "epochs: runs", "ttt_min std (cv)",
              "explained by epochs", "ttt_min at fewest / most epochs"]
    rows = []
    for s in spreads:
        rows.append([s.key.benchmark, s.key.platform, "n/a" if s.key.world is None else str(s.key.world),
                     str(s.runs), str(s.converged), summary(s.epochs),
                     "n/a" if s.ttt_std is None else f"{s.ttt_std:.3g} ({s.ttt_cv:.1%})",
                     "n/a" if s.explained is None else f"{s.explained:.0%}",
                     "n/a" if s.ttt_at_fewest is None else f"{s.ttt_at_fewest:.4g} / {s.ttt_at_most:.4g}"])
    return header, rows
