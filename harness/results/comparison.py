"""Platform A against platform B: two reports paired by benchmark at equal GPU counts (and their
throughput results by workload), with geometric means per category and overall.

    python -m harness.report RESULTS_A RESULTS_B --compare [--md F --csv F --json F --plots DIR]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from harness.results import platforms, render
from harness.results.collect import Report, build
from harness.results.plots import plot_compare

TTT_FIELDS = ("time_to_train", "throughput", "epochs_ratio")


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

    @property
    def empty(self) -> bool:
        return not self.pairs and not self.tput_pairs


def compare(a_paths: list[str], b_paths: list[str], jobs: Optional[int] = None) -> Comparison:
    a, b = build(a_paths, jobs=jobs), build(b_paths, jobs=jobs)
    pairs = platforms.pair_groups(a.stats, a.scores, b.stats, b.scores)
    tput = platforms.pair_throughput(a.tput_groups, b.tput_groups)
    unpaired = platforms.unpaired(a.stats, b.stats, pairs, lambda g: g.key.benchmark)
    unpaired += platforms.unpaired(a.tput_groups, b.tput_groups, tput, lambda g: g.workload)
    return Comparison(a_paths, b_paths, a, b, pairs, platforms.geomeans(pairs, TTT_FIELDS), tput,
                      platforms.geomeans(tput, ("ratio",)), unpaired)


def render_compare(c: Comparison, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out = [f"{bullet}A: {', '.join(c.a_paths)}", f"{bullet}B: {', '.join(c.b_paths)}", ""]
    if c.pairs:
        out += [head("A against B: time to train = throughput x epochs x rest, at equal GPU counts"),
                table(*platforms.pair_rows(c.pairs)), "",
                head("Geometric means (A's speedup over B)"), table(*platforms.geomean_rows(c.means)), ""]
    if c.tput_pairs:
        out += [head("A against B: throughput (mode=throughput results)"),
                table(*platforms.throughput_pair_rows(c.tput_pairs)), "",
                head("Geometric means of throughput ratios"), table(*platforms.geomean_rows(c.tput_means)), ""]
    if c.empty:
        out.append(f"{bullet}nothing to compare: no benchmark (or workload) at the same GPU count on both sides")
    out += [bullet + line for line in c.unpaired]
    return "\n".join(out).rstrip("\n") + "\n"


def plot(c: Comparison, out_dir: Path) -> list[Path]:
    written = []
    if c.pairs:
        labels = [f"{p.benchmark} ({p.world or 'n/a'})" for p in c.pairs]
        cats = list(dict.fromkeys(m.category for m in c.means))
        labels += [f"geomean {cat}" for cat in cats]
        series = {}
        for what, name in zip(TTT_FIELDS, ("time to train", "throughput", "epochs")):
            values = [getattr(p, what) for p in c.pairs]
            values += [next(m.value for m in c.means if m.category == cat and m.what == what) for cat in cats]
            series[name] = values
        written.append(plot_compare(labels, series, "A's speedup over B", out_dir / "compare.png"))
    if c.tput_pairs:
        labels = [f"{p.workload} {p.precision} ({p.world})" for p in c.tput_pairs]
        cats = list(dict.fromkeys(m.category for m in c.tput_means))
        values = [p.ratio for p in c.tput_pairs] + [next(m.value for m in c.tput_means if m.category == cat)
                                                    for cat in cats]
        written.append(plot_compare(labels + [f"geomean {cat}" for cat in cats], {"throughput": values},
                                    "A's throughput over B's", out_dir / "compare_throughput.png"))
    return written
