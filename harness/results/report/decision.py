"""The report's decision sections, after its tables: every group's score with its 95% interval, every
comparison's verdict and chances, and cost and energy ranked by time, cost or energy.

harness.report prints them after harness.results.report.sections (the runs, groups, speedups and seed spread);
the JSON and CSV carry the same figures (harness.results.report.export), and the page (`--html`, report_page)
opens with the verdicts.

Cost and energy as the report shows them (harness.results.analysis.cost computes them): the table ranked
by time, cost or energy, its notes, and a comparison's cost in words.

    python -m harness.report outputs/ --price "1xNVIDIA H200=3.50" --rank cost
    python -m harness.report A B --compare --price A6000=1.5 --price "RTX 3090=0.5"
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from harness.results.analysis import confidence, cost
from harness.results.analysis.confidence import GroupConfidence, Interval
from harness.results.analysis.cost import CostRatio, CostRow
from harness.results.analysis.stats import group_name, key_cells
from harness.results.report import render
from harness.results.report.html import Figures, page
from harness.results.report.verdicts import describe, describe_chances, describe_group, ratio_range


METHOD = (f"95% intervals: bootstrap over runs (scipy.stats.bootstrap, BCa, or percentile where BCa is undefined), "
          f"{confidence.RESAMPLES:,} resamples of each side, seed {confidence.SEED}; verdicts: two-sided permutation "
          f"test of the time-to-train ratio at 0.05 (exact up to {confidence.RESAMPLES:,} relabellings); runs to "
          f"resolve: 80% power at 0.05 for a difference of the observed size (docs/report.md)")


def _helpers(markdown: bool) -> tuple[Callable, Callable[[str], str], str]:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    return table, head, "- " if markdown else "  "


def _value(iv: Optional[Interval], spec: str = ".4g") -> str:
    if iv is None:
        return "n/a"
    return f"{'0' if iv.low is None else format(iv.low, spec)}-{'unbounded' if iv.high is None else format(iv.high, spec)}"


def score_rows(report: Any) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "platform", "world", "precision", "batch", "runs", "conv", "time_min", "time 95% interval",
              "throughput/s mean", "throughput 95% interval", "energy_kJ", "data wait"]
    rows = []
    for g in report.stats:
        c: Optional[GroupConfidence] = report.confidence.get(g.key)
        if c is None:
            continue
        tput_iv = c.throughput_interval
        rows.append(key_cells(g.key) + [
            str(g.runs), str(g.converged), render.fmt(c.minutes, ".4g"), _value(c.interval),
            render.throughput(c.throughput, g.throughput_unit, g.throughput_derived),
            "n/a" if tput_iv is None else "-".join(render.throughput(v) if v is not None else "unbounded"
                                                   for v in (tput_iv.low, tput_iv.high)),
            "n/a" if c.energy_j is None else f"{c.energy_j / 1000:.4g}", render.data_wait(c.data_wait_share)])
    return header, rows


def comparison_lines(report: Any) -> list[str]:
    """One verdict and one chances line per speedup and precision ratio."""
    out = []
    for s in report.speedups:
        where = f"{s.benchmark} {s.system} {s.precision or ''} {s.world} vs {s.baseline_world}"
        out += _lines(where, s.confidence, s.chances)
    for p in report.precisions:
        where = f"{p.benchmark} {p.system} {'' if p.world is None else p.world} {p.precision} vs {p.baseline_precision}"
        out += _lines(where, p.confidence, p.chances)
    return out


def _lines(where: str, conf: Any, odds: Any) -> list[str]:
    out = []
    if conf is not None:
        out.append(f"{' '.join(where.split())}: {describe(conf)}")
    said = "" if odds is None else describe_chances(odds)
    if said:
        out.append(f"{' '.join(where.split())}: chances: {said}")
    return out


def render_decision(report: Any, markdown: bool = False) -> str:
    table, head, bullet = _helpers(markdown)
    out: list[str] = []
    header, rows = score_rows(report)
    if rows:
        out += ["", head("Scores with 95% intervals (time to train: the MLPerf score, else the mean of converged "
                         "runs)"), table(header, rows)]
        out += [""] + [bullet + f"{' '.join(key_cells(g.key))}: {describe_group(report.confidence[g.key])}"
                       for g in report.stats if g.key in report.confidence]
    lines = comparison_lines(report)
    if lines:
        out += ["", head("How sure each comparison is, and where its speedup comes from")]
        out += [bullet + line for line in lines]
    if lines or rows:
        out += [bullet + METHOD]
    out += cost_section(report, markdown)
    return "\n".join(out) + ("\n" if out else "")


def cost_section(report: Any, markdown: bool = False) -> list[str]:
    """The cost and energy table, when prices are given or any group has energy."""
    if not report.stats or not (report.prices or any(g.energy_j.n for g in report.stats)):
        return []
    table, head, bullet = _helpers(markdown)
    rows = cost.cost_rows(report.stats, report.groups, report.confidence, report.prices, report.rank_by, report.scores)
    out = ["", head(f"Cost and energy per run, ranked by {report.rank_by} within each benchmark"),
           table(*cost_table(rows, report.rank_by))]
    notes = cost_notes(rows, report.prices)
    return out + ([""] + [bullet + n for n in notes] if notes else [])


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
        out.append(["void" if r.void else "-" if r.rank is None else str(r.rank), group_name(r.key)] + [r.side] * sides + [r.key.platform,
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


def report_page(report: Any, markdown: str, figures: Figures, paths: Sequence[str]) -> str:
    """harness.report's page (a submission tree's is harness.rounds.page's); verdicts: every comparison's
    verdict and chances (comparison_lines), else every score's interval."""
    verdicts = comparison_lines(report)
    if not verdicts:
        verdicts = [f"{' '.join(key_cells(k))}: {describe_group(c)}" for k, c in report.confidence.items()]
    return page("harness.report", paths, figures if report.groups else [], verdicts, markdown)
