"""The report's text, section by section, for the terminal or as Markdown."""
from __future__ import annotations

from harness.results import render, throughput
from harness.results.collect import Report
from harness.results.variance import spread_rows


def render_text(report: Report, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out: list[str] = []
    if report.runs or not report.tput_runs:
        out += [head("Runs"), table(*render.run_rows(report.runs))]
        notes = render.run_footnotes(report.runs)
        if notes:
            out.append("")
            out += [bullet + n for n in notes]
        out += ["", head("Groups: (benchmark, platform, world size, precision, global batch, accelerator, framework)"),
                table(*render.group_rows(report.stats, report.scores)), ""]
        out += [bullet + n for n in render.score_notes(report.stats, report.scores)]
    if report.warnings:
        out += ["", head("Notes")] + [bullet + w for w in report.warnings]
    if report.speedups:
        out += ["", head("Speedup over the smallest world size (time to train = throughput x epochs x rest)"),
                table(*render.speedup_rows(report.speedups)), ""]
        out += [bullet + n for n in render.speedup_notes(report.speedups)]
    if report.precisions:
        out += ["", head("Precision against fp32"), table(*render.precision_rows(report.precisions))]
    spreads = [s for s in report.spreads.values() if s.explained is not None]
    if spreads:
        out += ["", head("Seed variance: how much of the spread in time to train the epochs explain"),
                table(*spread_rows(spreads)), ""]
        out += [f"{bullet}{s.key.benchmark} {s.key.platform} {'' if s.key.world is None else s.key.world}: "
                f"{s.describe()}; slowest: {render.rel(s.slowest)} ({s.slowest_epochs:g} epochs, "
                f"{s.slowest_min:.4g} min)" for s in spreads]
    if report.tput_runs:
        out += ["", head("Throughput (mode=throughput): median of each run's windows; spread over runs"),
                table(*throughput.table_rows(report.tput_groups))]
        if report.scalings:
            out += ["", head("Scaling efficiency across GPU counts"), table(*throughput.scaling_rows(report.scalings))]
        if report.gains:
            out += ["", head("Precision against the baseline"), table(*throughput.gain_rows(report.gains))]
        failed = throughput.failures(report.tput_runs)
        if failed:
            out += [""] + [bullet + f for f in failed]
    return "\n".join(out) + "\n"
