"""How sure a figure is, in words (harness.results.analysis.confidence computes it): a comparison's
verdict with its interval, permutation p and the runs that would resolve it, a group's score with its
interval, and where a speedup comes from as chances (harness.results.analysis.chances). Definitions are in
docs/report.md ("How sure a comparison is").

And a group's score in words (harness.results.analysis.score computes it): what the olympic mean stands on,
or why the score is void, and what scaling.json did to it. The report's score notes, the round view's
notes and the JSON's `note` (a group's `score`, a round entry) give this text.

    python -m harness.report A B --compare         # every pair's verdict, as these sentences
    python -m harness.report outputs/sweeps/X      # "Score notes": each group's note and [rule]
"""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np

from harness.results.analysis.chances import Chances
from harness.results.analysis.confidence import (GroupConfidence, Interval, Judgement, MAX_RUNS, OLYMPIC, ONE_RUN,
    claims_more)
from harness.results.analysis.resampling import holds
from harness.results.analysis.score import (NOT_CONVERGED, NO_RUNS, REJECTED, Score, TOO_FEW_LEFT, TOO_MANY_DROPPED,
    UNSCORABLE, V05_NCF_SCORED)
from harness.results.report.explain import number, summary


INPUT_BOUND_TEXT = "input-bound: the numbers measure the loader"


def ratio_number(v: float) -> str:
    """'2.37', '0.34'; under 0.1, two significant digits ('0.0034', never '0.00'). The same rule for a
    ratio and its interval's bounds keeps a bound that holds its estimate printed on its side of it."""
    if v == 0 or abs(v) >= 0.1:
        return f"{v:.2f}"
    return str(np.format_float_positional(v, precision=2, fractional=False, trim="-"))


def _x(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{ratio_number(v)}x"


def ratio_range(iv: Interval) -> str:
    """'2.31x-2.42x'; an open bound reads 0x or unbounded."""
    return (f"{'0' if iv.low is None else ratio_number(iv.low)}x-"
            f"{'unbounded' if iv.high is None else ratio_number(iv.high) + 'x'}")


def no_interval(resampled: tuple[int, ...], needs: int, estimator: str, sides: tuple[str, ...] = ()) -> str:
    """Why a figure has no 95% interval: too few runs for one, or none of the bootstrap's holds it."""
    if min(resampled, default=0) >= needs:
        return "no 95% interval: the bootstrap's intervals leave out the estimate itself (too few distinct resamples)"
    what = "an olympic mean" if estimator == OLYMPIC else "a mean"
    has = " and ".join(f"{side} {n}" for side, n in zip(sides, resampled)) if sides else str(resampled[0])
    return f"no 95% interval: a bootstrap interval of {what} needs {needs} runs a side, {has} here"


def _both_true(j: Judgement) -> str:
    """Why an interval that leaves out 1x can stand beside 'not distinguishable', or a p under 0.05 beside it."""
    iv = j.time_interval
    if iv is None or j.p_value is None or j.verdict != "not distinguishable":
        return ""
    if claims_more(j.p_value, iv):
        return ("; the permutation test's p rules equal speed out, yet the 95% interval holds 1x, and a verdict "
                "claims no more than its interval")
    if not holds(iv, 1.0):
        return ("; the interval leaves out 1x, yet equal speed is not ruled out: the interval resamples the runs "
                "there are and runs narrow with few of them, while the permutation test's p counts every "
                "relabelling of the runs, so the verdict goes by p")
    return ""


def open_bounds(iv: Optional[Interval], low_side: str = "", high_side: str = "") -> str:
    """Why a bound is open: '; open below: 26% of the bootstrap's resamples void A's score (...)'. A ratio's
    low bound opens where its subject's score is void (low_side), the high where the reference's is (high_side);
    a group's minutes open above (high_side: 'the score')."""
    if iv is None:
        return ""
    out = []
    for bound, share, side in (("below", iv.void_low, low_side), ("above", iv.void_high, high_side)):
        if (iv.low if bound == "below" else iv.high) is None and share:
            out.append(f"open {bound}: {_pct(share)} of the bootstrap's resamples void {side} (a run that did "
                       "not converge or was not counted, drawn more often than the olympic mean drops), more than "
                       "the 2.5% a 95% interval leaves at each end")
    return "".join(f"; {t}" for t in out)


def value_range(iv: Interval, unit: str) -> str:
    """'18.47-19.41 min'."""
    return (f"{'0' if iv.low is None else format(iv.low, '.4g')}-"
            f"{'unbounded' if iv.high is None else format(iv.high, '.4g')} {unit}")


def describe(j: Judgement) -> str:
    """The verdict in words: 'A is faster: 2.37x (95% interval 2.31x-2.42x, ...)'."""
    n_sub, n_ref = j.runs
    if j.time_to_train is None:
        return "cannot be judged: a side has no converged run with a time to train"
    # a mean of converged runs (a void score) tests those alone: the count says so, not every run
    tested = j.resampled if j.estimator != OLYMPIC and all(j.resampled) else j.runs
    one_run = min(tested) < 2
    where = (f"95% interval {ratio_range(j.time_interval)}" if j.time_interval else
             no_interval(j.resampled, j.interval_needs, j.estimator, (j.subject, j.reference)))
    p = "" if j.p_value is None else f", permutation p{_p(j.p_value)}"
    runs = f"{n_sub} and {n_ref} runs" if tested == (n_sub, n_ref) else \
        f"{tested[0]} and {tested[1]} converged runs of {n_sub} and {n_ref}"
    if j.verdict == "faster":
        text = f"{j.subject} {_is(j.subject)} faster: {_x(j.time_to_train)} ({where}{p}, {runs})"
    elif j.verdict == "slower":
        text = (f"{j.reference} {_is(j.reference)} faster: speedup of {j.subject} {_x(j.time_to_train)} "
                f"({where}{p}, {runs})")
    elif j.verdict == ONE_RUN:
        text = f"{ONE_RUN}: {_x(j.time_to_train)} with {runs} ({where}{p})"
    else:
        text = f"not distinguishable with {runs}: {_x(j.time_to_train)} ({where}{p})"
        if claims_more(j.p_value, j.time_interval):
            pass  # the runs are enough for the test: _both_true says what holds the verdict back
        elif j.runs_needed is None:
            text += ("; no spread within a side to say how many runs would resolve it" if one_run
                     else "; no difference to resolve")
        elif j.runs_needed > MAX_RUNS:
            text += f"; more than {MAX_RUNS:,} runs per side would be needed to resolve a difference of this size"
        else:
            text += f"; about {j.runs_needed} runs per side would resolve a difference of this size at 95%"
    text += open_bounds(j.time_interval, f"{j.subject}'s score", f"{j.reference}'s score") + _both_true(j)
    if j.throughput is not None:
        tp = f" ({ratio_range(j.throughput_interval)})" if j.throughput_interval else ""
        text += f"; throughput {_x(j.throughput)}{tp}"
    if j.input_bound:
        text += f"; {INPUT_BOUND_TEXT} ({', '.join(input_bound_sides(j))})"
    return text


def input_bound_sides(j: Judgement) -> list[str]:
    """'B: data wait 12% of training time' for each input-bound side."""
    return [f"{label}: data wait {share:.0%} of training time" for label, share in j.input_bound]


def _is(label: str) -> str:
    """'4 GPUs are', '1 GPU is', 'A is'."""
    return "are" if re.match(r"^\d+ .*s$", label) and not label.startswith("1 ") else "is"


def _p(p: float) -> str:
    """'<0.001', '=0.016', '=0.21'."""
    return "<0.001" if p < 0.001 else f"={p:.3f}" if p < 0.1 else f"={p:.2f}"


def describe_group(g: GroupConfidence) -> str:
    """'18.5 min (95% interval 18.45-20.25 min, BCa bootstrap of 10 runs)'."""
    if g.minutes is None:
        return "no time to train: no converged run"
    text = f"{g.minutes:.4g} min"
    if g.interval is not None:
        text += (f" (95% interval {value_range(g.interval, 'min')}, {g.interval.method} of {g.resampled} runs"
                 f"{open_bounds(g.interval, high_side='the score')})")
    else:
        text += f" ({no_interval((g.resampled,), g.interval_needs, g.estimator)})"
    if g.input_bound:
        text += f"; {INPUT_BOUND_TEXT} (data wait {g.data_wait_share:.0%} of training time)"
    return text


def _about(x: float) -> str:
    return f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def _pct(p: float) -> str:
    return "<0.1%" if 0 < p < 0.001 else f"{p:.1%}" if p < 0.1 else f"{p:.0%}"


def _runs(counts: dict[str, int]) -> str:
    return summary(counts)  # epochs:runs while few; a summary for sample counts, which differ in every run


def describe_chances(c: Chances) -> str:
    """'expected about 3.0x ...; a 10.4x result (seed 2: 12 -> 4 epochs) happens with probability 4.0% ...'."""
    if c.expected is None:
        return ""
    sub_e, ref_e = c.epochs
    text = (f"expected about {_about(c.expected)} from the epoch spreads ({c.reference}: {_runs(ref_e)}; "
            f"{c.subject}: {_runs(sub_e)}, epochs:runs)")
    if c.per_epoch is not None:
        text += (f" = {c.per_epoch:.2f}x time per epoch x {c.expected_epochs[1] / c.expected_epochs[0]:.2f}x "
                 f"expected epochs ({number(float(f'{c.expected_epochs[1]:.3g}'))} -> "
                 f"{number(float(f'{c.expected_epochs[0]:.3g}'))})")
    if len(sub_e) == 1 and len(ref_e) == 1:  # no epoch luck to put a chance on: no seed, range or probability
        text += "; every run of a side needed the same epochs: the speedup is time per epoch, not epoch luck"
        return text + (f"; {c.left_out} run(s) that did not converge are left out" if c.left_out else "")
    if c.seed_speedup is not None and c.p_seed is not None and c.seed_epochs is not None:
        way = "at least" if c.seed_speedup >= c.expected else "at most"
        text += (f"; a {_about(c.seed_speedup)} result (seed {c.seed}: {number(c.seed_epochs[0])} -> "
                 f"{number(c.seed_epochs[1])} epochs) happens with probability {_pct(c.p_seed)} under the observed "
                 f"epoch spreads ({way} that, one run against one)")
    if c.observed is not None and c.p_observed is not None:
        if c.as_expected:
            text += f"; the reported {c.observed:.2f}x is what the spreads lead one to expect"
        elif c.p_observed > 0:
            way = "at least" if c.observed >= c.expected else "at most"
            text += (f"; one run against one gives {way} the reported {c.observed:.2f}x with probability "
                     f"{_pct(c.p_observed)}")
        else:  # the reported figure averages runs: no one pair of epoch counts need reach it
            text += (f"; no pair of epoch counts reaches the reported {c.observed:.2f}x with the mean times of its "
                     f"runs: the scores average the runs, and what sets them apart lies in those times, not in "
                     f"epoch luck")
    if c.single_range is not None:
        low, high = (_x(v) for v in c.single_range)
        if low == high:  # one pair of epoch counts holds 90% of the chance: every run of a side needed the same
            text += f"; at least 90% of single-run pairs give {low}"
        else:
            text += f"; 90% of single-run pairs fall in {low}-{high}"
    if c.left_out:
        text += f"; {c.left_out} run(s) that did not converge are left out"
    return text


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
