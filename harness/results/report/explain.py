"""Figures explained as a reader takes them in: a spread of convergence figures, the seed-variance view, and
why a speedup is what it is.

A spread of convergence figures: the runs at each value while there are few values, else a summary:
median, range, runs and a small histogram. Epochs to converge take a few values (`4:9 5:1`,
epochs:runs), and the report lists them. Convergence counted in samples or steps (BERT,
llama2_70b_lora, stable diffusion) takes a different value in almost every run: a list of ten
seven-digit sample counts reads as noise, so it is summarised instead:

    4:9 5:1
    median 3.45M (3.20M-3.70M), 10 runs ▂▅█▃▁▁▂▁

The histogram has eight bins from the least to the most, one block character per bin, its height the
bin's share of the runs relative to the fullest bin.

    python -c "from harness.results.report.explain import summary; print(summary({'3200000': 1, '3450000': 2}))"

The seed-variance view (harness.results.analysis.stats computes it): a row per group and a line
saying how much of its spread in time to train the epochs explain.

    python -m harness.report outputs/sweeps/X        # "Seed variance: ..." after the speedups

Why a speedup is what it is, in words (harness.results.analysis.speedups.attribution finds the factors):
a superlinear speedup's causes and what worked against it, or what a time to train lost against its
throughput, each factor with its share of the gap.

    python -m harness.report outputs/sweeps/X        # the speedups' notes: "superlinear: 10.4x faster on 4x ..."

Whether a speedup pairs one system family, in words (harness.results.analysis.lineage applies the rule):
'one system family', or what differs: 'not one system family: system line A vs B; framework X vs Y'.
The report's speedup notes, the round view and the JSON's `family` give this text.

    python -m harness.check.show family SYSTEM_NAME...     # the system line of each name (analysis.lineage)
"""
from __future__ import annotations

import statistics
from typing import Mapping, Optional, Sequence

from harness.results.analysis.lineage import Kinship
from harness.results.analysis.speedups import Attribution, Factor, SUPERLINEAR
from harness.results.analysis.stats import SeedSpread, group_name


LISTED = 6  # distinct values up to which each is listed with its runs
BINS = 8
BLOCKS = "▁▂▃▄▅▆▇█"


def number(x: float) -> str:
    """3448344 -> '3.45M', 23500 -> '23.5k', 4 -> '4', 0.75 -> '0.75'."""
    if abs(x) >= 1e6:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.3g}k"
    return f"{x:g}"


def values(counts: Mapping[str, int]) -> list[float]:
    """Every run's figure, from {figure: runs}."""
    return sorted(float(k) for k, n in counts.items() for _ in range(n))


def histogram(xs: list[float], bins: int = BINS) -> str:
    """Eight block characters, one per equal-width bin from min to max."""
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return BLOCKS[-1]
    tally = [0] * bins
    for x in xs:
        tally[min(bins - 1, int((x - lo) / (hi - lo) * bins))] += 1
    top = max(tally)
    return "".join(" " if n == 0 else BLOCKS[max(0, round(n / top * (len(BLOCKS) - 1)))] for n in tally)


def summary(counts: Mapping[str, int], listed: int = LISTED) -> str:
    """'4:9 5:1' for a few distinct values, else 'median 3.45M (3.20M-3.70M), 10 runs ▂▅█▃▁▁▂▁'; 'n/a'
    without runs."""
    if not counts:
        return "n/a"
    if len(counts) <= listed:
        return " ".join(f"{k}:{v}" for k, v in counts.items())
    xs = values(counts)
    return (f"median {number(statistics.median(xs))} ({number(xs[0])}-{number(xs[-1])}), {len(xs)} runs "
            f"{histogram(xs)}")


def describe_spread(s: SeedSpread) -> str:
    """'epochs explain 100% of the variance of time to train; 4 epochs took 40 min on average, 7 epochs 70 min'."""
    if s.explained is None:
        return "too few converged runs"
    lo, hi = min(s.epochs, key=float), max(s.epochs, key=float)
    u = s.unit
    text = f"{'epochs' if u == 'epochs' else u + ' to converge'} explain {s.explained:.0%} of the variance of time to train"
    if lo != hi:
        text += (f"; {lo} {u} took {s.ttt_at_fewest:.4g} min on average, {hi} {u} "
                 f"{s.ttt_at_most:.4g} min")
    else:
        text += f"; every converged run needed {lo} {u}: the spread is throughput and the rest"
    if s.converged < s.runs:
        text += f"; {s.runs - s.converged} of {s.runs} runs did not converge"
    return text


def spread_rows(spreads: Sequence[SeedSpread]) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "platform", "world", "runs", "conv", "epochs: runs", "ttt_min std (cv)",
              "explained by epochs", "ttt_min at fewest / most epochs"]
    rows = []
    for s in spreads:
        rows.append([group_name(s.key), s.key.platform, "n/a" if s.key.world is None else str(s.key.world),
                     str(s.runs), str(s.converged), summary(s.epochs),
                     "n/a" if s.ttt_std is None else f"{s.ttt_std:.3g} ({s.ttt_cv:.1%})",
                     "n/a" if s.explained is None else f"{s.explained:.0%}",
                     "n/a" if s.ttt_at_fewest is None else f"{s.ttt_at_fewest:.4g} / {s.ttt_at_most:.4g}"])
    return header, rows


def _share(f: Factor) -> str:
    return "n/a" if f.share is None else f"{f.share:.0%}"


def _superlinear(a: Attribution, f: Factor, span: str) -> str:
    if f.what == "throughput":
        tput = f"throughput {a.throughput:.2f}x" + (" (implied)" if a.throughput_implied else "")
        if f.gain:
            return (f"{tput}, {f.ratio:.2f}x beyond the GPU ratio (hardware: caches, contention, thread counts; "
                    f"{_share(f)} of the gain)")
        return f"{tput} is {f.ratio:.0%} of linear ({_share(f)})"
    if f.what == "epochs":
        if f.gain:
            return f"needing fewer epochs gave {f.ratio:.2f}x (epochs {span}: convergence; {_share(f)} of the gain)"
        return f"more epochs cost {1 / f.ratio:.2f}x (epochs {span}; {_share(f)})"
    return f"the rest (evaluation, start-up) {f.ratio:.2f}x ({_share(f)})"


_CAUSE = {"convergence": "convergence, not hardware", "hardware": "hardware, not convergence",
          "both": "both hardware and convergence", "rest": "the rest"}


def describe_attribution(a: Optional[Attribution]) -> str:
    """'superlinear: 10.4x faster on 4x the GPUs (2.60x beyond linear): ... Cause: convergence, not hardware',
    or 'time to train gained 1.33x of the 2.00x throughput: more epochs cost 1.50x ...'; "" when None."""
    if a is None:
        return ""
    span = f"{a.epochs[0]:.3g} -> {a.epochs[1]:.3g}"
    if a.kind == SUPERLINEAR:
        causes = [_superlinear(a, f, span) for f in a.factors if f.gain]
        costs = [_superlinear(a, f, span) for f in a.factors if not f.gain]
        text = (f"superlinear: {a.time_to_train:.1f}x faster on {a.gpu_ratio:g}x the GPUs ({a.gap:.2f}x beyond "
                f"linear): " + "; ".join(causes))
        if costs:
            text += "; against it: " + "; ".join(costs)
        return text + f". Cause: {_CAUSE[a.cause]}"
    costs = [f"more epochs cost {1 / f.ratio:.2f}x ({span}), {_share(f)} of the shortfall (epochs: runs "
             f"{summary(a.epoch_counts)})" if f.what == "epochs" else
             f"time outside the training loop (evaluation, start-up) cost {1 / f.ratio:.2f}x, {_share(f)} of the "
             "shortfall" for f in a.factors]
    return (f"time to train gained {a.time_to_train:.2f}x of the {a.throughput:.2f}x throughput: "
            + "; ".join(costs or [f"epochs {span} ({a.epochs_ratio:.2f}x)"]))


VOUCHED = "one system family"


def family_text(kin: Kinship) -> str:
    """VOUCHED where the pair is one family, else what differs."""
    if kin.vouched:
        return VOUCHED
    a, b = kin.base, kin.other
    differs = []
    if (a.submitter, a.division) != (b.submitter, b.division):
        differs.append(f"submitter {a.submitter} ({a.division}) vs {b.submitter} ({b.division})")
    if a.line != b.line:
        differs.append(f"system line {a.line} vs {b.line}")
    if a.accelerator != b.accelerator:
        differs.append(f"accelerator {a.accelerator} vs {b.accelerator}")
    if a.framework != b.framework:
        differs.append(f"framework {kin.base_framework or 'n/a'} vs {kin.other_framework or 'n/a'}")
    return "not one system family: " + "; ".join(differs)
