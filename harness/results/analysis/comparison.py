"""Platform A against platform B, or one GPU count (or precision) against another: two reports paired by
benchmark, with intervals, verdicts, chances, cost and energy, and geometric means per category.

    python -m harness.report RESULTS_A RESULTS_B --compare [--md F --csv F --json F --html F --plots DIR]
    python -m harness.report SWEEP_1GPU SWEEP_2GPU --compare --price CPU=0.05

Pairing, per benchmark: groups at equal GPU counts and precision pair first (the one with the most runs
where a side has several); what is left pairs when one side has a single group of the benchmark left,
whatever its GPU count and precision (a 1-rank sweep against a 2-rank one: the GPU count is the study),
with each of the other side's. The rest is listed as unpaired, not dropped silently. A's speedup over B =
B's time / A's time (MLPerf scores where both have one) = throughput ratio (A / B) x epochs ratio (B's
olympic-mean epochs / A's) x rest. Throughput results (mode=throughput) pair by workload, precision, GPU
count and global batch (harness.results.analysis.platforms).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from harness.results.analysis import cost, platforms
from harness.results.report import render
from harness.results.analysis.categories import category
from harness.results.analysis.chances import Chances, chances
from harness.results.analysis.collect import Report, build
from harness.results.analysis.compare import _epochs, _ratio, _time, count_label
from harness.results.analysis.confidence import Judgement, judge
from harness.results.report.plots import plot_compare
from harness.results.analysis.stats import GroupKey, GroupStats, accelerator_kind

TTT_FIELDS = ("time_to_train", "throughput", "epochs_ratio")


@dataclass(frozen=True)
class Matched:
    """One pair's groups and what is known about it beyond platforms.Pair's ratios."""

    a_key: GroupKey
    b_key: GroupKey
    a_world: Optional[int]
    b_world: Optional[int]
    gpus: str  # "8 GPUs", or "A 1 CPU rank, B 2 CPU ranks"
    gpus_cell: str  # the table's GPUs column: "8", or "1 vs 2" (A vs B)
    confidence: Optional[Judgement]
    chances: Optional[Chances]
    a_usd_per_hour: Optional[float] = None
    b_usd_per_hour: Optional[float] = None
    cost: Optional[str] = None  # "A costs 3.00x B per hour and is ... as fast: a run costs ..."


@dataclass
class Comparison:
    a_paths: list[str]
    b_paths: list[str]
    a: Report
    b: Report
    pairs: list[platforms.Pair]
    means: list[platforms.GeoMean]
    tput_pairs: list[platforms.ThroughputPair]
    tput_means: list[platforms.GeoMean]
    unpaired: list[str] = field(default_factory=list)
    matched: list[Matched] = field(default_factory=list)  # one per pair, in the same order
    prices: dict[str, float] = field(default_factory=dict)
    rank_by: str = "time"

    @property
    def empty(self) -> bool:
        return not self.pairs and not self.tput_pairs

    @property
    def a_name(self) -> str:
        return _name(self.a_paths)

    @property
    def b_name(self) -> str:
        return _name(self.b_paths)


def _name(paths: list[str]) -> str:
    return ", ".join(Path(p).name or p for p in paths)


def _pick(groups: list[GroupStats]) -> dict[tuple, GroupStats]:
    """One group per (benchmark, world, precision): the one with the most runs."""
    out: dict[tuple, GroupStats] = {}
    for g in sorted(groups, key=lambda g: (-g.runs, str(g.key))):
        out.setdefault((g.key.benchmark, g.key.world, g.key.precision), g)
    return out


def match(a: list[GroupStats], b: list[GroupStats]) -> tuple[list[tuple[GroupStats, GroupStats]], list[str]]:
    """(pairs of A's and B's groups, what could not be paired), as the module docstring says."""
    left, right = _pick(a), _pick(b)
    pairs = [(left[k], right[k]) for k in sorted(set(left) & set(right), key=str)]
    unpaired = []
    for bench in sorted({k[0] for k in left} | {k[0] for k in right}):
        la = [g for k, g in sorted(left.items(), key=lambda kv: str(kv[0])) if k[0] == bench and k not in right]
        rb = [g for k, g in sorted(right.items(), key=lambda kv: str(kv[0])) if k[0] == bench and k not in left]
        if la and rb and (len(la) == 1 or len(rb) == 1):
            pairs += [(ga, gb) for ga in la for gb in rb]
        else:
            for side, rest in (("A", la), ("B", rb)):
                for g in rest:
                    other = "B" if side == "A" else "A"
                    unpaired.append(f"{bench} at {_gpus(g)} {g.key.precision or ''}: only {side} has it"
                                    + (f" ({other} has {len(rb if side == 'A' else la)} other GPU counts or "
                                       "precisions: compare one folder of each)" if la and rb else "")
                                    + ": not compared")
    return pairs, unpaired


def _system_kind(g: GroupStats) -> str:
    return accelerator_kind(g.key.accelerator, g.key.platform)


def _gpus(g: GroupStats) -> str:
    return count_label(g.key.world, _system_kind(g))


def _pair(ga: GroupStats, gb: GroupStats, a: Report, b: Report) -> platforms.Pair:
    ttt = _ratio(_time(gb, b.scores[gb.key].minutes), _time(ga, a.scores[ga.key].minutes))
    tput = _ratio(ga.throughput.mean, gb.throughput.mean) if ga.throughput_unit == gb.throughput_unit else None
    epochs = _ratio(_epochs(gb), _epochs(ga))
    rest = ttt / (tput * epochs) if ttt is not None and tput is not None and epochs is not None else None
    world = ga.key.world if ga.key.world == gb.key.world else None
    precision = ga.key.precision if ga.key.precision == gb.key.precision else \
        f"{ga.key.precision or 'n/a'} vs {gb.key.precision or 'n/a'}"
    return platforms.Pair(ga.key.benchmark, category(ga.key.benchmark), world, precision, platforms._system(ga),
                          platforms._system(gb), ttt, tput, epochs, rest)


def _n(world: Optional[int]) -> str:
    return "n/a" if world is None else str(world)


def compare(a_paths: list[str], b_paths: list[str], jobs: Optional[int] = None,
            prices: Optional[dict[str, float]] = None, rank_by: str = "time") -> Comparison:
    a, b = build(a_paths, jobs=jobs), build(b_paths, jobs=jobs)
    prices = prices or {}
    for rep in (a, b):
        rep.prices, rep.rank_by = prices, rank_by
    groups, unpaired = match(a.stats, b.stats)
    pairs, matched = [], []
    for ga, gb in groups:
        pair = _pair(ga, gb, a, b)
        ra, rb = a.groups[ga.key], b.groups[gb.key]
        j = judge("A", ra, a.scores[ga.key].minutes, "B", rb, b.scores[gb.key].minutes, ga.key.benchmark,
                  ga.throughput_unit == gb.throughput_unit)
        gpus = _gpus(ga) if ga.key.world == gb.key.world else f"A {_gpus(ga)}, B {_gpus(gb)}"
        a_usd, b_usd = cost.price_for(ga.key, ra, prices)[0], cost.price_for(gb.key, rb, prices)[0]
        pairs.append(pair)
        cell = _n(ga.key.world) if ga.key.world == gb.key.world else f"{_n(ga.key.world)} vs {_n(gb.key.world)}"
        matched.append(Matched(ga.key, gb.key, ga.key.world, gb.key.world, gpus, cell, j,
                               chances("A", ra, "B", rb, j.time_to_train), a_usd, b_usd,
                               cost.compare_cost(a_usd, b_usd, pair.time_to_train, j.time_interval)))
    tput = platforms.pair_throughput(a.tput_groups, b.tput_groups)
    unpaired += platforms.unpaired(a.tput_groups, b.tput_groups, tput, lambda g: g.workload)
    return Comparison(a_paths, b_paths, a, b, pairs, platforms.geomeans(pairs, TTT_FIELDS), tput,
                      platforms.geomeans(tput, ("ratio",)), unpaired, matched, prices, rank_by)


def pair_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "category", "GPUs (A vs B)" if any(" vs " in m.gpus_cell for m in c.matched) else "GPUs",
              "precision", "A", "B", "A speedup (ttt)", "ttt 95% interval",
              "= throughput", "throughput 95% interval", "x epochs", "x rest", "verdict"]
    rows = []
    for p, m in zip(c.pairs, c.matched):
        rows.append([p.benchmark, p.category, m.gpus_cell, p.precision or "n/a", p.a, p.b, render.times(p.time_to_train),
                     render.interval(m.confidence), render.times(p.throughput),
                     render.interval(m.confidence, "throughput"), render.times(p.epochs_ratio), render.times(p.rest),
                     render.verdict_word(m.confidence)])
    return header, rows


def verdict_lines(c: Comparison) -> list[str]:
    out = []
    for p, m in zip(c.pairs, c.matched):
        where = f"{p.benchmark} {m.gpus} {p.precision or ''}".strip()
        if m.confidence is not None:
            out.append(f"{where}: {m.confidence.text}")
        if m.chances is not None and m.chances.text:
            out.append(f"{where}: chances: {m.chances.text}")
        if m.cost:
            out.append(f"{where}: cost: {m.cost}")
    return out


def cost_rows(c: Comparison) -> list[cost.CostRow]:
    """Both sides' groups, each marked A or B, ranked together within each benchmark."""
    from dataclasses import replace

    rows = []
    for side, rep in (("A", c.a), ("B", c.b)):
        for r in cost.cost_rows(rep.stats, rep.groups, rep.confidence, c.prices, c.rank_by):
            rows.append(replace(r, side=side, rank=None))
    rows.sort(key=lambda r: r.key.benchmark)
    return cost.rank(rows, c.rank_by)


def render_compare(c: Comparison, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out = [f"{bullet}A: {', '.join(c.a_paths)}", f"{bullet}B: {', '.join(c.b_paths)}", ""]
    if c.pairs:
        out += [head("A against B: time to train = throughput x epochs x rest"), table(*pair_rows(c)), "",
                head("Geometric means (A's speedup over B)"), table(*platforms.geomean_rows(c.means)), "",
                head("How sure each pair is, and where its speedup comes from")]
        out += [bullet + line for line in verdict_lines(c)] + [bullet + _method(), ""]
    if c.tput_pairs:
        out += [head("A against B: throughput (mode=throughput results)"),
                table(*platforms.throughput_pair_rows(c.tput_pairs)), "",
                head("Geometric means of throughput ratios"), table(*platforms.geomean_rows(c.tput_means)), ""]
    if c.empty:
        out.append(f"{bullet}nothing to compare: no benchmark (or workload) on both sides")
    out += [bullet + line for line in c.unpaired]
    if c.pairs and (c.prices or any(g.energy_j.n for rep in (c.a, c.b) for g in rep.stats)):
        rows = cost_rows(c)
        out += ["", head(f"Cost and energy per run, ranked by {c.rank_by} within each benchmark"),
                table(*cost.cost_table(rows, c.rank_by))]
        notes = cost.cost_notes(rows, c.prices)
        out += ([""] + [bullet + n for n in notes]) if notes else []
    return "\n".join(out).rstrip("\n") + "\n"


def _method() -> str:
    from harness.results.report.decision import METHOD

    return METHOD


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

