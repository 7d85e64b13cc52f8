"""Which page a report gets (`--html FILE`): a submission tree's report the round's page (round_page),
any other report the report's page, and a comparison its own, each built from html.py's parts with the
verdicts that head it.

    python -m harness.report outputs/sweeps/X --html report.html
    python -m harness.report A B --compare --html compare.html
"""
from __future__ import annotations

from typing import Any, Sequence

from harness.results.analysis import round as round_view
from harness.results.report.comparison_render import busy_line, verdict_lines
from harness.results.report.decision import comparison_lines
from harness.results.report.html import Figures, page
from harness.results.analysis.stats import key_cells
from harness.results.report.round_page import round_page
from harness.results.report.verdicts import describe_group


def report_page(report: Any, markdown: str, figures: Figures, paths: Sequence[str]) -> str:
    """harness.report's page; verdicts: every comparison's verdict and chances (decision.comparison_lines),
    else every score's interval."""
    view = round_view.of(report)
    if view is not None:  # a submission tree: the round's page, tables first, a few light charts, no per-group plots
        return round_page(report, view, markdown, paths)
    verdicts = comparison_lines(report)
    if not verdicts:
        verdicts = [f"{' '.join(key_cells(k))}: {describe_group(c)}" for k, c in report.confidence.items()]
    return page("harness.report", paths, figures if report.groups else [], verdicts, markdown)


def compare_page(c: Any, markdown: str, figures: Figures) -> str:
    """The comparison's page; a loaded machine heads its verdicts, as it heads the text."""
    busy = busy_line(c)
    return page(f"harness.report --compare: A ({c.a_name}) against B ({c.b_name})",
                [f"A: {', '.join(c.a_paths)}{c.a_what}", f"B: {', '.join(c.b_paths)}{c.b_what}"], figures,
                [f"Figures {busy}"] * bool(busy) + verdict_lines(c), markdown)
