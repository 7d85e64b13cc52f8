"""Cost and energy as the report shows them (harness.results.analysis.cost computes them): the table
ranked by time, cost or energy, its notes, and a comparison's cost in words.

    python -m harness.report outputs/ --price "1xNVIDIA H200=3.50" --rank cost
    python -m harness.report A B --compare --price A6000=1.5 --price "RTX 3090=0.5"
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from harness.results.analysis.confidence import Interval
from harness.results.analysis.cost import CostRatio, CostRow
from harness.results.report.verdicts import ratio_range


def _money(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}" if x >= 0.0001 else f"${x:.2e}"


def _big(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:.4g}"


def _range(iv: Optional[Interval], fmt: Callable[[float], str]) -> str:
    if iv is None:
        return "n/a"
    return f"{'0' if iv.low is None else fmt(iv.low)}-{'unbounded' if iv.high is None else fmt(iv.high)}"


def cost_table(rows: Sequence[CostRow], rank_by: str) -> tuple[list[str], list[list[str]]]:
    sides = any(r.side for r in rows)
    header = [f"rank ({rank_by})", "benchmark"] + ["side"] * sides + [
        "platform", "world", "precision", "runs", "time min", "time 95% interval", "USD/h", "priced by", "cost/run",
        "cost 95% interval", "per $", "energy kJ/run", "energy 95% interval"]
    out = []
    for r in rows:
        unit = (r.throughput_unit or "samples/s").split("/")[0]
        out.append(["-" if r.rank is None else str(r.rank), r.key.benchmark] + [r.side] * sides + [r.key.platform,
                    "n/a" if r.key.world is None else str(r.key.world), r.key.precision or "n/a", str(r.runs),
                    "n/a" if r.minutes is None else f"{r.minutes:.4g}", _range(r.minutes_interval, lambda v: f"{v:.4g}"),
                    "n/a" if r.usd_per_hour is None else f"{r.usd_per_hour:,.2f}", r.priced_by or "n/a",
                    _money(r.cost), _range(r.cost_interval, _money),
                    "n/a" if r.samples_per_usd is None else f"{_big(r.samples_per_usd)} {unit}",
                    "n/a" if r.energy_kj is None else f"{r.energy_kj:.4g}",
                    _range(r.energy_interval, lambda v: f"{v:.4g}")])
    return header, out


def cost_notes(rows: Sequence[CostRow], prices: dict[str, float]) -> list[str]:
    notes = []
    if prices and not any(r.usd_per_hour is not None for r in rows):
        notes.append(f"no --price matched a platform, system or accelerator (given: {', '.join(sorted(prices))})")
    if any(r.energy_kj is None for r in rows):
        notes.append("energy is n/a where result.json has no NVML energy (CPU runs, official logs)")
    if any(r.input_bound for r in rows):
        notes.append("a group marked input-bound in the tables above: its time and cost measure its data loader")
    return notes


def describe_cost(c: Optional[CostRatio]) -> Optional[str]:
    """'A costs 3.00x B per hour and is 0.92x-1.34x as fast: a run costs 2.24x-3.26x as much on A'."""
    if c is None:
        return None
    text = f"A costs {c.per_hour:.2f}x B per hour and is {c.speedup:.2f}x as fast"
    span = c.per_run_interval
    if c.speedup_interval is not None and span is not None:
        text += f" (95% interval {ratio_range(c.speedup_interval)})"
        c_lo = "0" if span[0] is None else f"{span[0]:.2f}"
        c_hi = "unbounded" if span[1] is None else f"{span[1]:.2f}x"
        return text + f": a run costs {c.per_run:.2f}x as much on A ({c_lo}x-{c_hi})"
    return text + f": a run costs {c.per_run:.2f}x as much on A"
