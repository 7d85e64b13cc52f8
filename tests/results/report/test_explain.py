"""Spreads as a reader takes them in (harness.results.report.explain): convergence figures listed by value
while there are few values, else the median, the range, the runs and an eight-bin histogram, never a
list of ten seven-digit sample counts; and the seed-variance view, whose note says how much of the
spread the epochs explain, or that every run needed the same epochs.

A speedup's explanation in words (harness.results.report.explain): a superlinear speedup names its
causes with their shares and the cause that wins; a shortfall names what each factor cost."""
from __future__ import annotations

from harness.results.analysis.speedups import SHORTFALL, SUPERLINEAR, Attribution, Factor
from harness.results.analysis.stats import GroupKey, seed_spread
from harness.results.read.summary import RunSummary
from harness.results.report.explain import describe_attribution, describe_spread, histogram, spread_rows, summary


def test_a_few_epoch_counts_are_listed_with_their_runs():
    assert summary({"4": 9, "5": 1}) == "4:9 5:1"
    assert summary({}) == "n/a"


def test_sample_counts_that_differ_in_every_run_are_summarised():
    bert = {str(3_200_000 + 53_211 * i): 1 for i in range(10)}  # BERT counts its convergence in samples
    text = summary(bert)
    assert text.startswith("median 3.44M (3.2M-3.68M), 10 runs ")
    assert "3200000" not in text and "3,200,000" not in text and len(text) < 60


def test_the_histogram_has_eight_bins_scaled_to_the_fullest():
    assert histogram([1, 1, 1, 1, 8]) == "█      ▃"
    assert histogram([5, 5]) == "█"


KEY = GroupKey("gnmt", "1xT4", 1, "amp", 256)


def _run(i, epochs, minutes):
    return RunSummary(path=f"r{i}", benchmark="gnmt", status="success", epochs_to_converge=epochs,
                      time_to_train_min=minutes, evals=[(epochs, 0.25)])


def test_the_note_and_row_say_what_the_epochs_explain():
    s = seed_spread(KEY, [_run(i, e, 10.0 * e) for i, e in enumerate([4, 4, 4, 5, 7])])
    assert describe_spread(s) == ("epochs explain 100% of the variance of time to train; 4 epochs took 40 min on "
                                  "average, 7 epochs 70 min")
    header, (row,) = spread_rows([s])
    assert dict(zip(header, row))["epochs: runs"] == "4:3 5:1 7:1"
    assert dict(zip(header, row))["ttt_min at fewest / most epochs"] == "40 / 70"


def test_equal_epochs_and_failures_are_said_and_too_few_runs_too():
    runs = [_run(i, 4, m) for i, m in enumerate([10.0, 11.0, 12.5])]
    runs.append(RunSummary(path="f", benchmark="gnmt", status="aborted"))
    assert describe_spread(seed_spread(KEY, runs)) == (
        "epochs explain 0% of the variance of time to train; every converged run needed 4 epochs: the spread is "
        "throughput and the rest; 1 of 4 runs did not converge")
    assert describe_spread(seed_spread(KEY, runs[:1])) == "too few converged runs"


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
