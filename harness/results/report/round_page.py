"""The one-page view of a round (`harness.report ROUND --html FILE` on a submission tree): a bar of links
to each benchmark, then the summary (harness.results.report.round_render: per benchmark the fastest system
and the fastest per accelerator, and the legend), so that the first screen answers "which system trains
BERT fastest per accelerator"; then the round view's compact tables (systems ranked per benchmark, each
benchmark's chart beside its tables, scaling within system families, accelerator against accelerator with
the chips' chart: harness.results.report.round_plots, small SVGs), then the report's other sections, the
runs table folded away.
Like every page of the report it loads nothing (harness.results.report.html's Content-Security-Policy), has no
script and prints.

    python -m harness.report training_results_v3.1 --html round.html
"""
from __future__ import annotations

import base64
import html
import re
from typing import Any, Sequence

from harness.results.report import html as page_html
from harness.results.analysis.round import RoundView
from harness.results.report.round_plots import charts
from harness.results.report.round_render import ACCELERATORS, SCALING, render_round
from harness.results.report.round_render import SUMMARY, render_summary

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
