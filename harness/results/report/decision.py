"""The report's decision sections, after its tables: every group's score with its 95% interval, every
comparison's verdict and chances, and cost and energy ranked by time, cost or energy.

harness.report prints them after harness.results.report.sections (the runs, groups, speedups and seed spread);
the JSON and CSV carry the same figures (harness.results.report.export).

    python -m harness.report outputs/ --price CPU=0.05 --rank cost
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from harness.results.analysis import confidence, cost
from harness.results.report import render
from harness.results.report.cost_render import cost_notes, cost_table
from harness.results.analysis.confidence import GroupConfidence, Interval
from harness.results.analysis.stats import key_cells
from harness.results.report.verdicts import describe, describe_chances, describe_group

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
    rows = cost.cost_rows(report.stats, report.groups, report.confidence, report.prices, report.rank_by)
    out = ["", head(f"Cost and energy per run, ranked by {report.rank_by} within each benchmark"),
           table(*cost_table(rows, report.rank_by))]
    notes = cost_notes(rows, report.prices)
    return out + ([""] + [bullet + n for n in notes] if notes else [])
