"""The one-page view of a round (`harness.report ROUND --html FILE` on a submission tree): a bar of links
to each benchmark, then the summary (harness.rounds.text: per benchmark the fastest system
and the fastest per accelerator, and the legend), so that the first screen answers "which system trains
BERT fastest per accelerator"; then the round view's compact tables (systems ranked per benchmark, each
benchmark's chart beside its tables, scaling within system families, accelerator against accelerator with
the chips' chart: small SVGs, below), then the report's other sections, the
runs table folded away.
Like every page of the report it loads nothing (harness.results.report.html's Content-Security-Policy), has no
script and prints.

The charts (`charts`), small SVGs (matplotlib, text kept as text): the few that answer a buyer's
questions, one per benchmark and one for the chips.

- `<benchmark>.svg` (`<benchmark>_<round>.svg` where several rounds are read): each closed-division system's official score against its accelerator count, both
  on log scales, one colour per chip; the systems of one family (harness.results.analysis.lineage) joined by a
  line, so that scaling reads along a line and the ranking across the chart; dotted diagonals are equal
  accelerator-minutes (a point below another's diagonal costs less accelerator time);
- `accelerators.svg`: each pair of chips' geometric mean speedup (harness.rounds.accelerators), overall.

    python -m harness.report training_results_v3.1 --html round.html
"""
from __future__ import annotations

import base64
import html
import io
import re
from typing import Any, Optional, Sequence

from harness.results.analysis.lineage import family_of
from harness.rounds.view import Entry, RoundView
from harness.results.report import html as page_html
from harness.rounds.text import ACCELERATORS, SCALING, SUMMARY, render_round, render_summary


CSS = """
nav.jump { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ccc; padding: 4px 0; z-index: 1;
  font-size: 13px; }
nav.jump a { margin-right: 10px; white-space: nowrap; }
figure img[src^="data:image/svg"] { width: 100%; }
h2, figure { scroll-margin-top: 36px; }
.round table { font-size: 13px; }
.round td, .round th { padding: 2px 6px; }
.round td { white-space: normal; min-width: 3em; }
.round td.num { white-space: nowrap; }
.summary table { font-size: 14px; }
.summary td { white-space: normal; }
.summary ul { font-size: 13px; margin: 4px 0 0; }
.round .plots figure { max-width: 640px; }
details > summary { cursor: pointer; font-weight: 600; margin: 18px 0 6px; }
@media print { nav.jump { position: static; } details { display: block; } }
"""


def _slug(title: str) -> str:
    return page_html._slug(title)


def _sections(markdown: str) -> list[tuple[str, str]]:
    """(title, its Markdown) for each `## ` section; text before the first heading has title ''."""
    out: list[tuple[str, str]] = []
    for part in re.split(r"(?m)^(?=## )", markdown):
        if part.strip():
            title = part[3:].split("\n", 1)[0].strip() if part.startswith("## ") else ""
            out.append((title, part))
    return out


def _figure(name: str, svg: str) -> str:
    uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    anchor = "chart-" + _slug(name.rsplit(".", 1)[0])
    caption = ("each chip's geometric mean speedup over another" if name == "accelerators.svg" else
               f"{name[:-4]}: each closed-division system's score against its accelerators; a line joins one "
               "system family; dotted: equal accelerator-minutes")
    return (f'<figure id="{anchor}" data-plot="{html.escape(name, quote=True)}"><img src="{uri}" '
            f'alt="{html.escape(caption, quote=True)}"><figcaption>{html.escape(caption)}</figcaption></figure>')


def _charts_of(title: str, figures: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The charts drawn beside a section: a benchmark's own ('gnmt.svg', 'gnmt_v0.7.svg'), the chips' beside
    the accelerator section."""
    if title == ACCELERATORS:
        return [(n, svg) for n, svg in figures if n == "accelerators.svg"]
    return [(n, svg) for n, svg in figures if n == f"{title}.svg" or n.startswith(f"{title}_v")]


def round_page(report: Any, view: RoundView, markdown: str, paths: Sequence[str]) -> str:
    """The page: the summary, the round's compact tables with their charts, then the rest of `markdown` (the
    report's own Markdown, which starts with the same round view)."""
    own = render_round(view, markdown=True)
    rest = markdown[len(own):] if markdown.startswith(own) else markdown
    figures = charts(view)
    links = [("summary", _slug(SUMMARY))] + [(b, _slug(b)) for b in view.benchmarks] + [("scaling", _slug(SCALING))]
    if view.accelerators:
        links.append(("accelerators", _slug(ACCELERATORS)))
    links += [("details", "details")]
    title = "MLPerf round: " + ", ".join(p.rstrip("/").rsplit("/", 1)[-1] for p in paths) if paths else "MLPerf round"
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if paths:
        parts.append(f'<p class="paths">{html.escape(" | ".join(paths))}</p>')
    parts.append('<nav class="jump">' + " ".join(f'<a href="#{a}">{html.escape(t)}</a>' for t, a in links) + "</nav>")
    parts.append(f'<section class="summary">{page_html.markdown_to_html(render_summary(view, markdown=True))}</section>')
    body = []
    for name, text in _sections(render_round(view, markdown=True, compact=True)):
        body.append(page_html.markdown_to_html(text))
        shown = _charts_of(name, figures)
        if shown:
            body.append('<div class="plots">' + "".join(_figure(n, svg) for n, svg in shown) + "</div>")
    parts.append('<section class="round">' + "\n".join(body) + "</section>")
    parts.append('<h2 id="details">Details: every folder\'s group, speedup and interval</h2>')
    for name, text in _sections(rest):
        part = page_html.markdown_to_html(text)
        if name == "Runs":  # a row per log: kept, folded away
            runs = sum(1 for line in text.splitlines() if line.startswith("| ")) - 1
            part = f"<details><summary>Runs ({max(runs, 0):,} logs)</summary>{part}</details>"
        parts.append(part)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{page_html.CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{page_html.CSS}{CSS}</style></head>\n<body><main>\n"
            + "\n".join(parts) + "\n</main></body></html>\n")


COLOURS = 8  # chips drawn in their own colour; the rest share grey
WIDTH, HEIGHT = 5.2, 3.4  # inches: two charts side by side on a laptop's page


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller, and searchable on the page
    import matplotlib.pyplot as plt

    return plt


def _svg(fig, plt, name: str) -> str:
    buf = io.StringIO()  # fixed margins (below), not tight_layout: it draws every figure twice
    # no timestamp, and the ids of markers and clip paths hashed from a salt of this chart's own (random by
    # default, and alike across charts would give one page two elements of one id): the same round, the same page
    with plt.rc_context({"svg.hashsalt": f"harness.rounds:{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def benchmark_chart(bench: str, round_: str, entries: Sequence[Entry], plt) -> Optional[str]:
    points = [e for e in entries if e.benchmark == bench and e.round == round_ and e.division == "closed"
              and e.minutes and e.accelerators]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT))
    # most systems first, ties by name: a set's order changes between processes, and the colours with it
    chips = sorted({e.chip for e in points}, key=lambda c: (-sum(1 for e in points if e.chip == c), c))
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
    return _svg(fig, plt, f"{bench}:{round_}")


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
    return _svg(fig, plt, "accelerators")


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
