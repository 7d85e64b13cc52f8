"""The round in a few lines: per benchmark, the fastest system and the fastest per accelerator, with one
definition of "per accelerator" and the legend of the round's tables. The round page opens with it and
`harness.report ROUND --html FILE` prints it instead of the full tables.

Per accelerator means accelerator-minutes: accelerators x official score (minutes), fewest first. It is
read from the official score alone, so every scored system has it, in one unit for every submitter; the
tables' "throughput / accelerator" comes from the logs, whose submitters count samples differently, and
ranks nothing.

    python -m harness.report training_results_v3.1 --html round.html
"""
from __future__ import annotations

from typing import Optional

from harness.results.analysis.round import Entry, RoundView
from harness.results.read import availability
from harness.results.report import render

SUMMARY = "Summary: the fastest system and the fastest per accelerator"
PER_ACCELERATOR = ("per accelerator = accelerator-minutes: accelerators x official score (minutes), fewest first: "
                   "what one result costs in accelerator time (8 accelerators for 60 minutes = 480), from the score "
                   "alone")
LEGEND = [
    "fastest = the lowest official score (minutes): the result summarizer's olympic mean of time to train",
    PER_ACCELERATOR,
    "closed division only (the open division changes the model); every availability category, each winner's named",
    f"{render.DERIVED} = throughput derived from the log's epoch intervals (the log states none); "
    "throughput / accelerator is read from the logs, whose submitters count samples differently, and ranks nothing",
    "n/a = not stated or not comparable (the notes under each benchmark say why); void = no official score",
]


def _who(e: Entry) -> str:
    short = availability.SHORT.get(e.availability, e.availability)
    count = f"{e.accelerators:,} x {e.chip}" if e.accelerators else e.chip
    return f"{e.submitter}/{e.system} ({count}, {short})"


def winners(view: RoundView) -> list[tuple[str, str, Entry, Entry, int]]:
    """(benchmark, round, fastest, fewest accelerator-minutes, systems scored) per benchmark and round, closed
    division only."""
    out: dict[tuple[str, str], list[Entry]] = {}
    for e in view.entries:
        if e.division == "closed" and e.minutes is not None:
            out.setdefault((e.benchmark, e.round), []).append(e)
    rows = []
    for (bench, round_), members in out.items():
        fastest = min(members, key=lambda e: e.minutes or 0.0)
        priced = [e for e in members if e.accelerator_minutes is not None]
        cheapest = min(priced, key=lambda e: e.accelerator_minutes or 0.0) if priced else fastest
        rows.append((bench, round_, fastest, cheapest, len(members)))
    return rows


def summary_rows(view: RoundView) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "round", "systems", "fastest (score, min)", "fastest per accelerator (accelerator-minutes)"]
    rows = []
    for bench, round_, fastest, cheapest, n in winners(view):
        per = "n/a" if cheapest.accelerator_minutes is None else f"{cheapest.accelerator_minutes:,.0f}"
        rows.append([bench, round_, str(n), f"{fastest.minutes:.3f}: {_who(fastest)}", f"{per}: {_who(cheapest)}"])
    return header, rows


def render_summary(view: RoundView, markdown: bool = False, legend: bool = True) -> str:
    """The summary table and its legend."""
    table = render.markdown_table if markdown else render.text_table
    head = f"## {SUMMARY}\n" if markdown else f"{SUMMARY}\n{'=' * len(SUMMARY)}"
    bullet = "- " if markdown else "  "
    header, rows = summary_rows(view)
    out = [head, table(header, rows) if rows else f"{bullet}no closed-division system has an official score", ""]
    if legend:
        out += [bullet + line for line in LEGEND] + [""]
    return "\n".join(out)


def short_text(view: Optional[RoundView]) -> Optional[str]:
    """What the terminal shows when the tables went to a page: the summary and its legend."""
    return None if view is None else render_summary(view)
