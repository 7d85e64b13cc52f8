"""Where a speedup comes from, as chances: what each side's spread of epochs to converge makes likely.

Per side, from its converged runs: p(e), the share of runs that needed e epochs, and T(e), the mean time to
train of those runs (time per epoch x e + the rest, as measured). Expected time = sum of p(e) T(e); the
expected speedup = the reference's expected time / the subject's = the ratio of time per epoch (expected
time / expected epochs) x the ratio of expected epochs. One run against one run gives the speedup
T_ref(e_r) / T_sub(e_s) with probability p_ref(e_r) p_sub(e_s); the chance of a speedup at least as large
as an observed one sums the pairs that reach it, and a seed's own pair of epochs counts as reaching its own
speedup (its runs did, whatever the other runs of those epochs took): what was observed never gets 0. Exact
over the observed values: no model, no resampling.

On MLPerf GNMT, 4 T4s trained 10.4x faster than one in seed 2 (12 epochs against 4) while throughput
scaled 3.47x: read this way it is "expected about 3x; a 10.4x result happens with probability p" (the words:
harness.results.report.verdicts.describe_chances).

    python -m harness.report outputs/sweeps/X        # every speedup's chances, after its verdict
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from harness.results.read.summary import RunSummary

TOL = 1e-9  # relative: the observed value itself counts as "at least as large"
NEAR = 1.05  # within 5% of the expected speedup: no chance to tell


@dataclass(frozen=True)
class Chances:
    subject: str
    reference: str
    expected: Optional[float]  # the reference's expected time / the subject's
    per_epoch: Optional[float]  # ratio of time per epoch (reference / subject): what throughput and the rest give
    expected_epochs: tuple[float, float]  # subject, reference
    epochs: tuple[dict[str, int], dict[str, int]]  # {epochs: runs}, subject and reference
    observed: Optional[float]  # the comparison's speedup (scores)
    p_observed: Optional[float]  # chance of one run against one being at least that far from expected
    seed: Any  # the shared seed whose speedup lies farthest from the expected one
    seed_speedup: Optional[float]
    seed_epochs: Optional[tuple[float, float]]  # reference's, subject's epochs in that seed
    p_seed: Optional[float]
    single_range: Optional[tuple[float, float]]  # 5th and 95th percentile of one run against one
    left_out: int  # runs that did not converge: no epochs to count

    @property
    def as_expected(self) -> bool:
        """The observed speedup lies within NEAR of the expected one: no chance to tell."""
        return (self.observed is not None and self.observed > 0 and self.expected is not None
                and abs(math.log(self.observed / self.expected)) < math.log(NEAR))


def _side(runs: Sequence[RunSummary]) -> dict[float, tuple[float, float]]:
    """epochs -> (share of converged runs, mean minutes of those runs)."""
    by: dict[float, list[float]] = {}
    for r in runs:
        if r.converged and r.epochs_to_converge is not None and r.time_to_train_min:
            by.setdefault(float(r.epochs_to_converge), []).append(r.time_to_train_min)
    n = sum(len(v) for v in by.values())
    return {e: (len(v) / n, sum(v) / len(v)) for e, v in sorted(by.items())}


def _label(e: float) -> str:
    return str(int(e)) if float(e).is_integer() else f"{e:g}"


def _chance(pairs: list[tuple[float, float]], s: float, upward: bool, own: Optional[int] = None) -> float:
    """P(speedup >= s) (upward) or P(speedup <= s) over (speedup, probability) pairs; pairs[own], the pair
    of epochs that gave s, counts whatever its mean speedup."""
    if upward:
        return sum(p for i, (v, p) in enumerate(pairs) if v >= s * (1 - TOL) or i == own)
    return sum(p for i, (v, p) in enumerate(pairs) if v <= s * (1 + TOL) or i == own)


def _quantile(pairs: list[tuple[float, float]], q: float) -> float:
    acc = 0.0
    for v, p in sorted(pairs):
        acc += p
        if acc >= q - 1e-12:
            return v
    return max(v for v, _ in pairs)


def same_epochs(a: Sequence[RunSummary], b: Sequence[RunSummary]) -> bool:
    """Whether both sides' converged runs count their epochs to converge in one unit (epochs, samples,
    steps or tokens): a ratio across units means nothing."""
    return len({r.epoch_unit for r in (*a, *b) if r.converged}) <= 1


def chances(subject: str, sub_runs: Sequence[RunSummary], reference: str, ref_runs: Sequence[RunSummary],
            observed: Optional[float]) -> Optional[Chances]:
    """None when a side has no converged run with its epochs and time, or the sides count epochs in
    different units."""
    sub, ref = _side(sub_runs), _side(ref_runs)
    if not sub or not ref or not same_epochs(sub_runs, ref_runs):
        return None
    e_sub = sum(p * e for e, (p, _) in sub.items())
    e_ref = sum(p * e for e, (p, _) in ref.items())
    t_sub = sum(p * t for p, t in sub.values())
    t_ref = sum(p * t for p, t in ref.values())
    expected = t_ref / t_sub
    per_epoch = (t_ref / e_ref) / (t_sub / e_sub) if e_ref and e_sub else None
    pairs = [(tr / ts, pr * ps) for pr, tr in ref.values() for ps, ts in sub.values()]
    epoch_pairs = [(er, es) for er in ref for es in sub]  # the same order as pairs
    p_obs = None
    if observed is not None and observed > 0:
        p_obs = _chance(pairs, observed, observed >= expected)
    seed = seed_speedup = seed_epochs = p_seed = None
    ref_by_seed = {r.seed: r for r in ref_runs if r.converged and r.seed is not None and r.time_to_train_min}
    # (seed, this seed's speedup, the reference's epochs, the subject's)
    shared = [(r.seed, (ref_by_seed[r.seed].time_to_train_min or 0.0) / r.time_to_train_min,
               float(ref_by_seed[r.seed].epochs_to_converge or 0), float(r.epochs_to_converge or 0))
              for r in sub_runs if r.converged and r.seed in ref_by_seed and r.time_to_train_min]
    if shared:
        seed, seed_speedup, e_r, e_s = max(shared, key=lambda x: abs(math.log(x[1] / expected)))
        seed_epochs = (e_r, e_s)
        own = epoch_pairs.index((e_r, e_s)) if (e_r, e_s) in epoch_pairs else None
        p_seed = _chance(pairs, seed_speedup, seed_speedup >= expected, own)
    left_out = sum(1 for r in list(sub_runs) + list(ref_runs) if not r.converged)
    return Chances(subject, reference, expected, per_epoch, (e_sub, e_ref),
                   ({_label(e): _count(sub_runs, e) for e in sub}, {_label(e): _count(ref_runs, e) for e in ref}),
                   observed, p_obs, seed, seed_speedup, seed_epochs, p_seed,
                   (_quantile(pairs, 0.05), _quantile(pairs, 0.95)), left_out)


def _count(runs: Sequence[RunSummary], e: float) -> int:
    return sum(1 for r in runs if r.converged and r.epochs_to_converge is not None and float(r.epochs_to_converge) == e
               and r.time_to_train_min)
