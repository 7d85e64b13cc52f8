"""A speedup's explanation in words (harness.results.report.attribution): a superlinear speedup names its
causes with their shares and the cause that wins; a shortfall names what each factor cost."""
from __future__ import annotations

from harness.results.analysis.speedups import SHORTFALL, SUPERLINEAR, Attribution, Factor
from harness.results.report.attribution import describe_attribution


def test_a_superlinear_speedup_names_its_causes_what_worked_against_it_and_the_cause():
    # GNMT on T4s: 10.4x on 4 GPUs, throughput 3.47x (87% of linear), 3x fewer epochs
    a = Attribution(SUPERLINEAR, 10.41, 3.47, False, 3.0, 4.0, (12.0, 4.0), {"4": 5},
                    (Factor("throughput", 3.47 / 4, -0.155, False), Factor("epochs", 3.0, 1.155, True)), "convergence")
    assert describe_attribution(a) == (
        "superlinear: 10.4x faster on 4x the GPUs (2.60x beyond linear): needing fewer epochs gave 3.00x (epochs "
        "12 -> 4: convergence; 116% of the gain); against it: throughput 3.47x is 87% of linear (-16%). Cause: "
        "convergence, not hardware")
    both = Attribution(SUPERLINEAR, 6.0, 3.0, True, 2.0, 2.0, (4.0, 2.0), {"2": 5},
                       (Factor("throughput", 1.5, 0.369, True), Factor("epochs", 2.0, 0.631, True),
                        Factor("rest", 1.1, None, True)), "both")
    said = describe_attribution(both)
    assert "throughput 3.00x (implied), 1.50x beyond the GPU ratio (hardware: caches, contention, thread counts; " \
           "37% of the gain)" in said
    assert "; the rest (evaluation, start-up) 1.10x (n/a)" in said and said.endswith("Cause: both hardware and convergence")


def test_a_shortfall_names_each_factor_s_cost_and_the_epochs_runs():
    a = Attribution(SHORTFALL, 1.2, 2.0, False, 4 / 6, 2.0, (4.0, 6.125), {"6": 7, "7": 1},
                    (Factor("epochs", 4 / 6, 0.79, False), Factor("rest", 0.9, 0.21, False)), "")
    assert describe_attribution(a) == (
        "time to train gained 1.20x of the 2.00x throughput: more epochs cost 1.50x (4 -> 6.12), 79% of the "
        "shortfall (epochs: runs 6:7 7:1); time outside the training loop (evaluation, start-up) cost 1.11x, 21% of "
        "the shortfall")
    bare = Attribution(SHORTFALL, 1.2, 2.0, False, 1.0, 2.0, (4.0, 4.0), {"4": 5}, (), "")
    assert describe_attribution(bare) == "time to train gained 1.20x of the 2.00x throughput: epochs 4 -> 4 (1.00x)"
    assert describe_attribution(None) == ""
