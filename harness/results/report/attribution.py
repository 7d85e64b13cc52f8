"""Why a speedup is what it is, in words (harness.results.analysis.speedups.attribution finds the factors):
a superlinear speedup's causes and what worked against it, or what a time to train lost against its
throughput, each factor with its share of the gap.

    python -m harness.report outputs/sweeps/X        # the speedups' notes: "superlinear: 10.4x faster on 4x ..."

Whether a speedup pairs one system family, in words (harness.results.analysis.lineage applies the rule):
'one system family', or what differs: 'not one system family: system line A vs B; framework X vs Y'.
The report's speedup notes, the round view and the JSON's `family` give this text.

    python -m harness.results.report.attribution SYSTEM_NAME...     # the system line of each name
"""
from __future__ import annotations

import sys
from typing import Optional

from harness.results.analysis.lineage import Kinship, system_line
from harness.results.analysis.speedups import SUPERLINEAR, Attribution, Factor
from harness.results.report.spread import summary

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


def main(argv: list[str]) -> int:
    for name in argv:
        print(f"{name}: {system_line(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
