"""The report's text, section by section, for the terminal or as Markdown.

Runs stopped by Ctrl-C or SIGTERM are listed apart (not in the runs table nor in any group: MLPerf
scores completed runs only). The report ends with what became of every run it read: scored, with
warnings, did not converge, could not be scored, interrupted, each kind of reason with its count.
"""
from __future__ import annotations

from harness.results.report import render
from harness.results.report import throughput_tables as throughput
from harness.results.analysis import round as round_view
from harness.results.report.notes import notes as report_notes
from harness.results.report.round_render import render_round
from harness.results.analysis.collect import Report
from harness.results.read.summary import RunSummary, tally
from harness.results.report.seed_spread import describe_spread, spread_rows

EXAMPLES = 2  # paths shown per kind of warning


def render_text(report: Report, markdown: bool = False) -> str:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out: list[str] = []
    view = round_view.of(report)  # a submission tree: the round, ranked, before the per-run detail
    if view is not None:
        out += [render_round(view, markdown)]
    completed = [r for r in report.runs if r.interrupted is None]
    stopped = [r for r in report.runs if r.interrupted is not None]
    if completed or not (report.tput_runs or stopped):
        out += [head("Runs"), table(*render.run_rows(completed))]
        notes = render.run_footnotes(completed)
        if notes:
            out.append("")
            out += [bullet + n for n in notes]
    if stopped:
        out += ["", head("Interrupted runs (stopped by a signal: not completed, so not scored)")]
        out += [f"{bullet}{render.rel(r.path)}: {r.benchmark or '?'}, stopped by {r.interrupted}"
                + ("" if r.run_start_ms is not None else " before run_start") for r in stopped]
    if report.stats:
        out += ["", head("Groups: (benchmark, platform, world size, precision, global batch, accelerator, framework)"),
                table(*render.group_rows(report.stats, report.scores)), ""]
        out += [bullet + n for n in render.score_notes(report.stats, report.scores)]
        out += [f"{bullet}{g.key.benchmark} {g.key.platform}: convergence in {unit}, as the RCP checker reads it"
                for g, unit in _units(report)]
    said = report_notes(report)
    if said:
        out += ["", head("Notes")] + [bullet + w for w in said]
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
                f"{describe_spread(s)}; slowest: {render.rel(s.slowest or '?')} ({s.slowest_epochs:g} {s.unit}, "
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
    if report.runs:
        out += ["", head("What became of the runs")] + [bullet + line for line in outcome_lines(report.runs)]
    return "\n".join(out) + "\n"


def _units(report: Report):
    """Groups whose convergence is not counted in epochs, with the unit it is counted in."""
    for g in report.stats:
        units = {r.epoch_unit for r in report.groups.get(g.key, []) if r.epochs_to_converge is not None}
        if units and units != {"epochs"}:
            yield g, " and ".join(sorted(units))


def outcome_lines(runs: list[RunSummary]) -> list[str]:
    """How many runs were scored, warned about, not converged, not scorable and interrupted, and why."""
    t = tally(runs)
    lines = [f"{t.runs} run(s) read: {t.scored} scored, {t.not_converged} did not converge, {t.unscorable} could "
             f"not be scored, {t.interrupted} interrupted; {t.warned} with warnings (still scored where they count)"]
    for kind, n in sorted(t.problems.items(), key=lambda kv: -kv[1]):
        lines.append(f"could not be scored, {n} run(s): {kind}")
    for kind, n in sorted(t.warnings.items(), key=lambda kv: -kv[1]):
        examples = [render.rel(r.path) for r in runs if any(_same(kind, w) for w in r.warnings)][:EXAMPLES]
        lines.append(f"warning, {n} run(s): {kind} (e.g. {', '.join(examples)})")
    for signal, n in sorted(t.signals.items()):
        lines.append(f"interrupted by {signal}, {n} run(s): listed apart, in no group and no score")
    return lines


def _same(kind: str, message: str) -> bool:
    from harness.results.read.summary import kind_of

    return kind_of(message) == kind
