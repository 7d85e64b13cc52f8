"""The round page's charts, small SVGs (matplotlib, text kept as text): the few that answer a buyer's
questions, one per benchmark and one for the chips.

- `<benchmark>.svg` (`<benchmark>_<round>.svg` where several rounds are read): each closed-division system's official score against its accelerator count, both
  on log scales, one colour per chip; the systems of one family (harness.results.analysis.lineage) joined by a
  line, so that scaling reads along a line and the ranking across the chart; dotted diagonals are equal
  accelerator-minutes (a point below another's diagonal costs less accelerator time);
- `accelerators.svg`: each pair of chips' geometric mean speedup (harness.results.analysis.accelerators), overall.

    python -m harness.report training_results_v3.1 --html round.html
"""
from __future__ import annotations

import io
from typing import Optional, Sequence

from harness.results.analysis.lineage import family_of
from harness.results.analysis.round import Entry, RoundView

COLOURS = 8  # chips drawn in their own colour; the rest share grey
WIDTH, HEIGHT = 5.2, 3.4  # inches: two charts side by side on a laptop's page


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller, and searchable on the page
    import matplotlib.pyplot as plt

    return plt


def _svg(fig, plt) -> str:
    buf = io.StringIO()  # fixed margins (below), not tight_layout: it draws every figure twice
    fig.savefig(buf, format="svg", metadata={"Date": None})  # no timestamp: the same round, the same page
    plt.close(fig)
    return buf.getvalue()


def benchmark_chart(bench: str, round_: str, entries: Sequence[Entry], plt) -> Optional[str]:
    points = [e for e in entries if e.benchmark == bench and e.round == round_ and e.division == "closed"
              and e.minutes and e.accelerators]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
    chips = sorted({e.chip for e in points}, key=lambda c: -sum(1 for e in points if e.chip == c))
    colour = {c: f"C{i}" for i, c in enumerate(chips[:COLOURS])}
    for chip in chips:
        mine = [e for e in points if e.chip == chip]
        ax.scatter([e.accelerators for e in mine], [e.minutes for e in mine], s=16, color=colour.get(chip, "0.6"),
                   label=chip if chip in colour else None, zorder=3)
    for line in _family_lines(points):
        ax.plot([e.accelerators for e in line], [e.minutes for e in line], color="0.25", lw=0.8, zorder=2)
    xs = [float(e.accelerators or 1) for e in points]
    ys = [float(e.minutes or 1.0) for e in points]
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo, hi = min(xs) / 1.6, max(xs) * 1.6
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(ys) / 1.6, max(ys) * 1.6)
    best = min(x * y for x, y in zip(xs, ys))
    for k in (1, 4, 16, 64):  # equal accelerator-minutes: k times the least any system needed
        ax.plot([lo, hi], [best * k / lo, best * k / hi], ls=":", lw=0.6, color="0.7", zorder=1)
    _plain_ticks(ax, ax.xaxis, ax.yaxis)
    ax.set(title=f"{bench} ({round_}): time to train against accelerators (closed)", xlabel="accelerators",
           ylabel="score (minutes)")
    ax.title.set_fontsize(9)
    fig.subplots_adjust(left=0.13, right=0.97, bottom=0.14, top=0.9)
    ax.legend(fontsize=6, loc="upper right", frameon=False)
    return _svg(fig, plt)


def _plain_ticks(ax, *axes) -> None:
    """Log axes labelled 10, 100, 1,000 and 0.5 rather than as powers (no TeX layout, and a buyer reads
    them); an axis spanning less than two decades also labels its 2s and 5s."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for axis in axes:
        axis.set_major_formatter(plain)
        lo, hi = axis.get_view_interval()
        if hi < 100 * lo:
            axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
            axis.set_minor_formatter(plain)
        else:
            axis.set_minor_formatter(NullFormatter())
    ax.tick_params(which="both", labelsize=7)


def _family_lines(points: Sequence[Entry]) -> list[list[Entry]]:
    """The systems of each family (harness.results.analysis.lineage) that has two or more counts, by count."""
    families: dict = {}
    for e in points:
        families.setdefault(family_of(e.key), []).append(e)
    return [sorted(m, key=lambda e: e.accelerators or 0) for m in families.values()
            if len({e.accelerators for e in m}) >= 2]


def accelerators_chart(view: RoundView, plt) -> Optional[str]:
    overall = [m for m in view.means if m.category == "overall" and m.value]
    if not overall:
        return None
    overall.sort(key=lambda m: -(m.value or 0))
    fig, ax = plt.subplots(figsize=(WIDTH, max(2.0, 0.28 * len(overall) + 0.9)))
    labels = [f"{m.a} vs {m.b} ({m.n})" for m in overall]
    values = [m.value or 0.0 for m in overall]
    ax.barh(range(len(values)), values, color="C0")
    ax.set_yticks(range(len(values)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xscale("log")
    for i, v in enumerate(values):
        ax.annotate(f"{v:.2f}x", (v, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=6)
    ax.set_xlim(0.8, max(values) * 1.6 if values else 2)
    _plain_ticks(ax, ax.xaxis)
    ax.set(title="chip A against chip B: geometric mean speedup (rows)", xlabel="A's speedup over B (log scale)")
    ax.title.set_fontsize(8)
    fig.subplots_adjust(left=0.36, right=0.95, bottom=0.9 / fig.get_figheight(), top=1 - 0.45 / fig.get_figheight())
    return _svg(fig, plt)


def charts(view: RoundView) -> list[tuple[str, str]]:
    """(name, SVG text) of every chart of the round view."""
    plt = _pyplot()
    out = []
    rounds = list(dict.fromkeys((e.benchmark, e.round) for e in view.entries))
    for bench, round_ in rounds:
        svg = benchmark_chart(bench, round_, view.entries, plt)
        if svg:  # one chart per benchmark, named for its round only where the view holds several
            name = bench if sum(1 for b, _ in rounds if b == bench) == 1 else f"{bench}_{round_}"
            out.append((f"{name}.svg", svg))
    svg = accelerators_chart(view, plt)
    if svg:
        out.append(("accelerators.svg", svg))
    return out

