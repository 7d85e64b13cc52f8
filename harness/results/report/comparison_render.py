"""Platform A against platform B as the report shows it (harness.results.analysis.comparison pairs
them): the pairs' table with intervals and verdicts, the geometric means, the verdicts, chances and cost
in words, the comparison's plots, and its page (`--html`).

    python -m harness.report RESULTS_A RESULTS_B --compare [--md F --html F --plots DIR]
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from harness.results.analysis.speedups import count_label
from harness.results.analysis.comparison import TTT_FIELDS, Comparison, Matched, cost_rows
from harness.results.analysis.confidence import Judgement
from harness.results.analysis.comparison import GeoMean, ThroughputPair, Unpaired
from harness.results.analysis.stats import BUSY
from harness.results.report import render
from harness.results.report.decision import cost_notes, cost_table, describe_cost
from harness.results.report.decision import METHOD
from harness.results.report.html import Figures, page
from harness.results.report.plots import plot_compare
from harness.results.report.verdicts import describe, describe_chances


def _x(v: Optional[float]) -> str:
    return render.times(v)


def throughput_pair_rows(pairs: Sequence[ThroughputPair]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "category", "GPUs", "precision", "global batch", "A", "B", "A / B throughput"]
    return header, [[p.workload, p.category, str(p.world), p.precision,
                     "n/a" if p.global_batch_size is None else str(p.global_batch_size), p.a, p.b, _x(p.ratio)]
                    for p in pairs]


def geomean_rows(means: Sequence[GeoMean]) -> tuple[list[str], list[list[str]]]:
    whats = list(dict.fromkeys(m.what for m in means))
    header = ["category", "pairs"] + [f"geomean {w.replace('_', ' ')}" for w in whats]
    rows = []
    for cat in dict.fromkeys(m.category for m in means):
        ms = {m.what: m for m in means if m.category == cat}
        rows.append([cat, str(max(m.n for m in ms.values()))] + [_x(ms[w].value) for w in whats])
    return header, rows


def _n(world: Optional[int]) -> str:
    return "n/a" if world is None else str(world)


def _gpus_cell(m: Matched) -> str:
    """The table's GPUs column: "8", or "1 vs 2" (A vs B)."""
    return _n(m.a_world) if m.a_world == m.b_world else f"{_n(m.a_world)} vs {_n(m.b_world)}"


def pair_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "category",
              "GPUs (A vs B)" if any(m.a_world != m.b_world for m in c.matched) else "GPUs",
              "precision", "A", "B", "A speedup (ttt)", "ttt 95% interval",
              "= throughput", "throughput 95% interval", "x epochs", "x rest", "verdict"]
    rows = []
    for p, m in zip(c.pairs, c.matched):
        rows.append([p.benchmark, p.category, _gpus_cell(m), p.precision or "n/a", p.a, p.b, render.times(p.time_to_train),
                     render.interval(m.confidence), render.times(p.throughput),
                     render.interval(m.confidence, "throughput"), render.times(p.epochs_ratio), render.times(p.rest),
                     render.verdict_word(m.confidence)])
    return header, rows


def verdict_lines(c: Comparison) -> list[str]:
    out = []
    for p, m in zip(c.pairs, c.matched):
        where = f"{p.benchmark} {m.gpus} {p.precision or ''}".strip()
        if m.confidence is not None:
            out.append(f"{where}: {describe(m.confidence)}")
        ua, ub = (next((g.epoch_unit for g in rep.stats if g.key == key), None)
                  for rep, key in ((c.a, m.a_key), (c.b, m.b_key)))
        if ua and ub and ua != ub:
            out.append(f"{where}: no epochs ratio nor chances: A's runs converge in {ua}, B's in {ub} (their rounds' "
                       "rules count it so), and one does not divide the other")
        said = "" if m.chances is None else describe_chances(m.chances)
        if said:
            out.append(f"{where}: chances: {said}")
        cost = describe_cost(m.cost)
        if cost:
            out.append(f"{where}: cost: {cost}")
    return out


def busy_line(c: Comparison) -> str:
    """What the report's busy mark says of each side's runs, for the comparison of the two; '' when none."""
    if not c.busy:
        return ""
    sides = ", ".join(f"{side}: {n} of {runs} run(s)" for side, n, runs in c.busy)
    return (f"taken on a loaded machine ({sides}): other processes used at least half a core during those runs "
            "(result.json host_load), so their times and throughputs, and the ratios here, measure the neighbours too")


def render_compare(c: Comparison, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out = [f"{bullet}A: {', '.join(c.a_paths)}{c.a_what}", f"{bullet}B: {', '.join(c.b_paths)}{c.b_what}"]
    busy = busy_line(c)
    out += [f"{bullet}{BUSY} {busy}"] * bool(busy) + [""]
    if c.pairs:
        out += [head("A against B: time to train = throughput x epochs x rest"), table(*pair_rows(c)), "",
                head("Geometric means (A's speedup over B)"), table(*geomean_rows(c.means)), "",
                head("How sure each pair is, and where its speedup comes from")]
        out += [bullet + line for line in verdict_lines(c)] + [bullet + METHOD, ""]
    if c.tput_pairs:
        out += [head("A against B: throughput (mode=throughput results)"),
                table(*throughput_pair_rows(c.tput_pairs)), "",
                head("Geometric means of throughput ratios"), table(*geomean_rows(c.tput_means)), ""]
    if c.empty:
        out.append(f"{bullet}nothing to compare: no benchmark (or workload) on both sides")
    out += [bullet + unpaired_line(u) for u in c.unpaired]
    if c.pairs and (c.prices or any(g.energy_j.n for rep in (c.a, c.b) for g in rep.stats)):
        rows = cost_rows(c)
        out += ["", head(f"Cost and energy per run, ranked by {c.rank_by} within each benchmark"),
                table(*cost_table(rows, c.rank_by))]
        notes = cost_notes(rows, c.prices)
        out += ([""] + [bullet + n for n in notes]) if notes else []
    return "\n".join(out).rstrip("\n") + "\n"


def unpaired_line(u: Unpaired) -> str:
    """'ncf at 1 CPU rank fp32: only A has it (B has 2 other GPU counts or precisions: ...): not compared'."""
    if u.gpus is None:
        return f"{u.name}: only {u.side} has it (or no GPU count matches): not compared"
    other = "B" if u.side == "A" else "A"
    return (f"{u.name} at {u.gpus} {u.precision or ''}: only {u.side} has it"
            + (f" ({other} has {u.others} other GPU counts or precisions: compare one folder of each)" if u.others
               else "") + ": not compared")


def plot(c: Comparison, out_dir: Path) -> list[Path]:
    written = []
    title = f"A's speedup over B (A: {c.a_name}; B: {c.b_name})"
    if c.pairs:
        labels = [f"{p.benchmark} ({m.gpus})" for p, m in zip(c.pairs, c.matched)]
        cats = list(dict.fromkeys(m.category for m in c.means))
        labels += [f"geomean {cat}" for cat in cats]
        series, errors = {}, {}
        for what, name in zip(TTT_FIELDS, ("time to train", "throughput", "epochs")):
            values = [getattr(p, what) for p in c.pairs]
            values += [next(m.value for m in c.means if m.category == cat and m.what == what) for cat in cats]
            series[name] = values
            key = {"time_to_train": "time", "throughput": "throughput", "epochs_ratio": "epochs"}[what]
            errors[name] = [_bounds(m.confidence, key) for m in c.matched] + [None] * len(cats)
        written.append(plot_compare(labels, series, title, out_dir / "compare.png", errors))
    if c.tput_pairs:
        labels = [f"{p.workload} {p.precision} ({count_label(p.world, '')})" for p in c.tput_pairs]
        cats = list(dict.fromkeys(m.category for m in c.tput_means))
        values = [p.ratio for p in c.tput_pairs] + [next(m.value for m in c.tput_means if m.category == cat)
                                                    for cat in cats]
        written.append(plot_compare(labels + [f"geomean {cat}" for cat in cats], {"throughput": values},
                                    f"A's throughput over B's (A: {c.a_name}; B: {c.b_name})",
                                    out_dir / "compare_throughput.png"))
    return written


def _bounds(j: Optional[Judgement], what: str) -> Optional[tuple[Optional[float], Optional[float]]]:
    iv = None if j is None else getattr(j, f"{what}_interval")
    return None if iv is None else (iv.low, iv.high)


def compare_page(c: Comparison, markdown: str, figures: Figures) -> str:
    """The comparison's page; a loaded machine heads its verdicts, as it heads the text."""
    busy = busy_line(c)
    return page(f"harness.report --compare: A ({c.a_name}) against B ({c.b_name})",
                [f"A: {', '.join(c.a_paths)}{c.a_what}", f"B: {', '.join(c.b_paths)}{c.b_what}"], figures,
                [f"Figures {busy}"] * bool(busy) + verdict_lines(c), markdown)
