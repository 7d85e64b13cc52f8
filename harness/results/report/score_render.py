"""A group's score in words (harness.results.analysis.score computes it): what the olympic mean stands on,
or why the score is void, and what scaling.json did to it. The report's score notes, the round view's
notes and the JSON's `note` (a group's `score`, a round entry) give this text.

    python -m harness.report outputs/sweeps/X      # "Score notes": each group's note and [rule]
"""
from __future__ import annotations

from typing import Any

from harness.results.analysis.score import (NOT_CONVERGED, NO_RUNS, REJECTED, TOO_FEW_LEFT, TOO_MANY_DROPPED,
                                            UNSCORABLE, V05_NCF_SCORED, Score)

DROPPED = {REJECTED: "rejected by the official checker (see problems)", UNSCORABLE: "cannot be scored (see problems)",
           NOT_CONVERGED: "did not converge"}


def dropped_text(dropped: tuple[tuple[str, int], ...]) -> str:
    """'2 did not converge, 1 rejected by the official checker (see problems)'."""
    return ", ".join(f"{n} {DROPPED[kind]}" for kind, n in dropped)


def score_note(s: Score) -> str:
    """'olympic mean of 8 runs (1 did not converge: counted as the slowest)', 'void: ...'; then scaling.json."""
    return (_olympic(s) if s.ncf is None else _v05_ncf(s)) + _scaling(s)


def _olympic(s: Score) -> str:
    if s.void == NO_RUNS:
        return "no runs"
    if s.void == TOO_MANY_DROPPED:
        return f"void: {dropped_text(s.dropped)}; MLPerf allows {s.max_dropped} such run(s)"
    if s.void == TOO_FEW_LEFT:
        return "void: too few runs left once the fastest and slowest are dropped"
    note = f"olympic mean of {s.kept} runs"
    if s.dropped:
        note += f" ({dropped_text(s.dropped)}: counted as the slowest)"
    if s.required is not None and s.runs < s.required:
        note += f"; MLPerf requires {s.required} runs, found {s.runs}"
    return note


def _v05_ncf(s: Score) -> str:
    choice = s.ncf
    assert choice is not None
    source = "the submitter's first_50_success_file" if choice.used_list else "by result number"
    if choice.listed is not None:
        source += (f"; the submitter's first_50_success_file lists {choice.listed} runs, {choice.failed} of which "
                   "did not converge in these logs: not used")
    if s.void is not None:
        return f"void: {s.converged} of {s.runs} runs converged; the rule needs {V05_NCF_SCORED} ({source})"
    note = f"olympic mean of {s.kept} of the first {V05_NCF_SCORED} converged runs ({source})"
    if s.required is not None and s.runs < s.required:
        note += f"; the rule wants {s.required} runs, found {s.runs}"
    return note


def _scaling(s: Score) -> str:
    if s.scaling_problem:
        return f"; {s.scaling_problem}"
    if s.scaling_early:
        return f"; scaling.json not applied: the summarizer reads it from v2.0 on, these logs are {s.scaling_early}'s"
    if s.scaling == 1.0:
        return ""
    if s.minutes is None:
        return f"; scaling.json gives {s.scaling:.6g}"
    return f", x {s.scaling:.6g} (scaling.json)"


def score_json(s: Score) -> dict[str, Any]:
    """A group's `score` in the JSON (docs/report.md): the record's numbers, its note and rule, count_ok."""
    return {"benchmark": s.benchmark, "runs": s.runs, "converged": s.converged, "required": s.required,
            "minutes": s.minutes, "note": score_note(s), "rule": s.rule, "scaling": s.scaling, "unscaled": s.unscaled,
            "count_ok": s.count_ok}
