"""The report's text, section by section, for the terminal or as Markdown, and its notes.

Runs stopped by Ctrl-C or SIGTERM are listed apart (not in the runs table nor in any group: MLPerf
scores completed runs only). The report ends with what became of every run it read: scored, with
warnings, did not converge, could not be scored, interrupted, each kind of reason with its count.

The notes say what a reader should know that does not stop a group being scored: a seed used by
several runs, runs on a busy machine, the runs counted as not converged (harness.results.analysis.collect
finds them), and groups whose runs waited for data over 5% of training time (result.json). harness.report
prints them as warnings, under "Notes" and in the JSON's `warnings`.

The mode=throughput tables (harness.results.analysis.throughput computes them): per workload,
scaling across GPU counts, precision against the baseline, fast path against the eager step, and the
cells that failed. `python -m harness.report` prints them when such runs are present; harness.bench's
tables (bench_tables) build on them.

    python -m harness.report outputs/sweeps/X
    python -m harness.check.show throughput outputs/benchmark      # the four throughput tables, as text
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harness.results.analysis import confidence
from harness.results.analysis.collect import Report
from harness.results.analysis.stats import BUSY, GroupKey, GroupStats, group_name, key_cells
from harness.results.analysis.throughput import FastGain, PrecisionGain, Scaling, ThroughputGroup, ThroughputRun
from harness.results.read.summary import RunSummary, Shortfall, tally
from harness.results.report import render
from harness.results.report.explain import describe_spread, spread_rows
from harness.results.report.render import rel
from harness.results.report.verdicts import INPUT_BOUND_TEXT


EXAMPLES = 2  # paths shown per kind of warning


def render_text(report: Report, markdown: bool = False, first: Sequence[str] = ()) -> str:
    """The report's sections; `first`, text a caller puts before the per-run detail (harness.report puts a
    submission round's view there: harness.rounds builds on this layer, so it cannot be called from it)."""
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    bullet = "- " if markdown else "  "
    out: list[str] = list(first)
    completed = [r for r in report.runs if r.interrupted is None]
    stopped = [r for r in report.runs if r.interrupted is not None]
    if completed or not (report.tput_runs or stopped):
        out += [head("Runs"), table(*render.run_rows(completed))]
        footnotes = render.run_footnotes(completed)
        if footnotes:
            out.append("")
            out += [bullet + n for n in footnotes]
    if stopped:
        out += ["", head("Interrupted runs (stopped by a signal: not completed, so not scored)")]
        out += [f"{bullet}{render.rel(r.path)}: {r.benchmark or '?'}, stopped by {r.interrupted}"
                + ("" if r.run_start_ms is not None else " before run_start") for r in stopped]
    if report.stats:
        out += ["", head("Groups: (benchmark, platform, world size, precision, global batch, accelerator, framework)"),
                table(*render.group_rows(report.stats, report.scores)), ""]
        out += [bullet + n for n in render.score_notes(report.stats, report.scores)]
        out += [f"{bullet}{group_name(g.key)} {g.key.platform}: convergence in {unit}, as the RCP checker reads it"
                for g, unit in _units(report)]
    said = notes(report)
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
        out += [f"{bullet}{group_name(s.key)} {s.key.platform} {'' if s.key.world is None else s.key.world}: "
                f"{describe_spread(s)}; slowest: {render.rel(s.slowest or '?')} ({s.slowest_epochs:g} {s.unit}, "
                f"{s.slowest_min:.4g} min)" for s in spreads]
    if report.tput_runs:
        out += ["", head("Throughput (mode=throughput): median of each run's windows; spread over runs"),
                table(*table_rows(report.tput_groups))]
        if report.scalings:
            out += ["", head("Scaling efficiency across GPU counts"), table(*scaling_rows(report.scalings))]
        if report.gains:
            out += ["", head("Precision against the baseline"), table(*gain_rows(report.gains))]
        failed = failures(report.tput_runs)
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


def notes(report: Report) -> list[str]:
    """Every note, in the order the report gives them: groups, runs counted as not converged, input-bound."""
    return group_notes(report.stats) + short_notes(report.short) + input_bound_notes(report.groups)


def shortfall_text(short: Shortfall) -> str:
    """'status success, but its last evaluation (BLEU 0.2000) does not reach the target (>= 0.24)'."""
    if short.error is not None:
        return f"status success, but its quality cannot be compared with the target {short.target!r}: {short.error}"
    return (f"status success, but its last evaluation ({short.spec.describe(short.quality)}) "
            f"does not reach the target ({short.spec.describe_target(short.target)})")


def short_notes(runs: list[RunSummary]) -> list[str]:
    """The runs whose log says success that are counted as not converged, and why."""
    return [f"{r.path}: {shortfall_text(r.short_of_target)}: counted as not converged"
            for r in runs if r.short_of_target is not None]


def group_notes(stats: list[GroupStats]) -> list[str]:
    """Things a reader should know about a group that do not stop it being scored."""
    out = []
    for g in stats:
        where = " ".join(key_cells(g.key))
        for seed, n in sorted(g.repeated_seeds.items(), key=lambda kv: str(kv[0])):
            out.append(f"{where}: seed {seed} was used by {n} runs: they are not independent samples of the seed spread")
        if g.busy:
            out.append(f"{where}: {g.busy} of {g.runs} run(s) ran on a busy machine (marked {BUSY})")
        if g.key.target is not None:
            out.append(f"{where}: runs alike but for their target state another one: these runs, to target "
                       f"{g.key.target}, are scored as a group of their own")
        if g.key.settings is not None:
            swept = ", ".join(re.findall(r"(?:^|, )([A-Za-z_][\w.]*)=", g.key.settings))
            out.append(f"{where}: runs alike but for {swept} are scored apart: these runs have {g.key.settings}")
    return out


def input_bound_notes(groups: dict[GroupKey, list[RunSummary]]) -> list[str]:
    """Groups whose runs waited for data over 5% of training time, and the runs that did (result.json)."""
    out = []
    for key in sorted(groups, key=str):
        runs = groups[key]
        share = confidence.data_wait(runs)
        over = [r for r in runs if confidence.input_bound(r.data_wait_share)]
        if confidence.input_bound(share):
            out.append(f"{' '.join(key_cells(key))}: {INPUT_BOUND_TEXT} (data wait {share:.0%} of "
                       f"training time, mean of {sum(r.data_wait_share is not None for r in runs)} run(s))")
        elif over:
            out.append(f"{' '.join(key_cells(key))}: {len(over)} run(s) {INPUT_BOUND_TEXT} (data wait "
                       f"over {confidence.INPUT_BOUND:.0%}: {', '.join(f'{r.data_wait_share:.0%}' for r in over[:5])})")
        held = [s for s in (confidence.startup_share(r) for r in runs) if s is not None and s > confidence.INPUT_BOUND]
        if held:
            out.append(f"{' '.join(key_cells(key))}: {len(held)} run(s) held back by the loaders' start-up (the warm-up "
                       f"steps' wait for batches, left out of the data wait: {', '.join(f'{s:.0%}' for s in held[:5])} "
                       "of the time to train)")
    return out


def _fmt(x: Optional[float]) -> str:
    return "n/a" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.4g}")


def table_rows(groups: Sequence[ThroughputGroup]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "model", "accelerator", "precision", "GPUs", "global batch", "runs", "median",
              "unit", "spread of runs (min-max, std)", "windows (min-max)"]
    rows = []
    for g in groups:
        spread = "n/a" if g.median is None or g.min is None or g.max is None else \
            f"{_fmt(g.min)}-{_fmt(g.max)} ({(g.max - g.min) / g.median:.1%}), std {_fmt(g.std)}"
        missing = ", ".join(f"{n} {what}" for n, what in ((g.failed, "failed"), (g.aborted, "aborted")) if n)
        runs = f"{g.runs}" + (f" ({missing})" if missing else "")
        rows.append([g.workload, g.model, g.accelerator, g.precision, str(g.world_size),
                     "n/a" if g.global_batch_size is None else str(g.global_batch_size), runs, _fmt(g.median), g.unit,
                     spread, "n/a" if g.windows_min is None else f"{_fmt(g.windows_min)}-{_fmt(g.windows_max)}"])
    return header, rows


def label(workload: str, model: str = "") -> str:
    """'bert_large squad384' where one workload label belongs to several models, else the workload."""
    return workload if model in ("", workload) else f"{model} {workload}"


def scaling_rows(scalings: Sequence[Scaling]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "precision", "GPUs", "speedup", "efficiency"]
    return header, [[label(s.workload, s.model), s.accelerator, s.precision, f"{s.world} vs {s.base_world}",
                     "n/a" if s.speedup is None else f"{s.speedup:.2f}x",
                     "n/a" if s.efficiency is None else f"{s.efficiency:.0%}"] for s in scalings]


def gain_rows(gains: Sequence[PrecisionGain]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "GPUs", "precision", "vs", "throughput ratio"]
    return header, [[label(p.workload, p.model), p.accelerator, str(p.world_size), p.precision, p.baseline,
                     "n/a" if p.ratio is None else f"{p.ratio:.2f}x"] for p in gains]


def fast_rows(gains: Sequence[FastGain]) -> tuple[list[str], list[list[str]]]:
    header = ["workload", "accelerator", "GPUs", "precision", "path", "fast", "eager", "unit", "fast / eager"]
    return header, [[label(f.workload, f.model), f.accelerator, str(f.world_size), f.base, f.path, _fmt(f.fast),
                     _fmt(f.eager), f.unit, "n/a" if f.ratio is None else f"{f.ratio:.2f}x"] for f in gains]


def failures(runs: Sequence[ThroughputRun]) -> list[str]:
    return [f"{rel(r.path)}: {r.workload} {r.precision} {r.world_size} GPU(s) {r.status}: {r.reason or 'no reason given'}"
            for r in runs if r.status != "success"]
