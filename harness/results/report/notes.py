"""The report's notes: what a reader should know that does not stop a group being scored: a seed used by
several runs, runs on a busy machine, the runs counted as not converged (harness.results.analysis.collect
finds them), and groups whose runs waited for data over 5% of training time (result.json). harness.report
prints them as warnings, under "Notes" and in the JSON's `warnings`.

    python -m harness.report outputs/sweeps/X
"""
from __future__ import annotations

from harness.results.analysis import confidence
from harness.results.analysis.collect import Report
from harness.results.analysis.stats import BUSY, GroupKey, GroupStats, key_cells
from harness.results.read.summary import RunSummary, Shortfall
from harness.results.report.verdicts import INPUT_BOUND_TEXT


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
    return out
