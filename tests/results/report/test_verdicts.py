"""How sure a figure is, in words (harness.results.report.verdicts): a speedup's chances as a reader of the
report's "chances:" line sees them for epoch counts and for sample counts, and a score's note: what
scaling.json did to the olympic mean, said after it (applied in every round, as the installed summarizer
applies it; given for a void score; or not applied with the file's problem)."""
from __future__ import annotations

import json

import pytest

from harness.results.analysis.chances import chances
from harness.results.analysis.confidence import judge
from harness.results.analysis.score import round_score
from harness.results.read.summary import RunSummary
from harness.results.report.verdicts import describe, describe_chances, input_bound_sides, score_json, score_note


def _run(seed, epochs, minutes, bench="x", unit="epochs"):
    return RunSummary(path=f"r{seed}", benchmark=bench, status="success", seed=seed, epochs_to_converge=epochs,
                      time_to_train_min=minutes, evals=[(epochs, 1.0)], epoch_unit=unit)


def test_the_chances_line_names_the_spreads_the_farthest_seed_and_the_reported_speedup():
    ref = [_run(1, 2, 20.0), _run(2, 4, 40.0), _run(3, 2, 20.0), _run(4, 2, 20.0)]
    sub = [_run(1, 2, 10.0), _run(2, 2, 10.0), _run(3, 3, 15.0)]
    failed = RunSummary(path="f", benchmark="x", status="aborted", seed=9)
    text = describe_chances(chances("B", sub + [failed], "A", ref, observed=2.0))
    assert text.startswith("expected about 2.1x from the epoch spreads (A: 2:3 4:1; B: 2:2 3:1, epochs:runs)")
    assert "a 4.0x result (seed 2: 4 -> 2 epochs) happens with probability 17% under the observed epoch spreads " \
           "(at least that, one run against one)" in text
    assert "one run against one gives at most the reported 2.00x with probability 75%" in text
    assert text.endswith("; 1 run(s) that did not converge are left out")
    # within 5% of the expected speedup, the reported one reads as expected, with no probability
    near = describe_chances(chances("B", sub, "A", ref, observed=2.1))
    assert "the reported 2.10x is what the spreads lead one to expect" in near


def test_sample_counts_read_as_a_summary_not_a_list_of_every_figure():
    big = [_run(s, 3_400_000 + 37_000 * s, 5.0 + 0.05 * s, "bert", "samples") for s in range(10)]
    small = [_run(s, 3_300_000 + 41_000 * s, 40.0 + 0.4 * s, "bert", "samples") for s in range(10)]
    text = describe_chances(chances("64 GPUs", big, "8 GPUs", small, None))
    assert "8 GPUs: median 3.48M (3.3M-3.67M), 10 runs" in text and "64 GPUs: median 3.57M" in text
    assert "3400000" not in text and ":1 " not in text


def test_an_input_bound_side_is_a_share_in_the_judgement_and_a_note_in_the_verdict():
    slow = [RunSummary(path=f"s{i}", benchmark="x", status="success", seed=i, epochs_to_converge=2,
                       time_to_train_min=10.0 + i, evals=[(2, 1.0)], data_wait_share=0.12) for i in range(3)]
    fast = [_run(i, 2, 5.0 + i) for i in range(3)]
    j = judge("A", slow, None, "B", fast, None)
    assert j.input_bound == [("A", 0.12)]
    assert input_bound_sides(j) == ["A: data wait 12% of training time"]
    assert describe(j).endswith("; input-bound: the numbers measure the loader (A: data wait 12% of training time)")


def test_ratios_under_0_1_keep_two_significant_digits_never_0_00x():
    from harness.results.analysis.resampling import Interval
    from harness.results.report.verdicts import ratio_number, ratio_range

    assert [ratio_number(v) for v in (2.371, 0.34, 0.0034123, 0.0999, 0.0)] == ["2.37", "0.34", "0.0034", "0.1", "0.00"]
    assert ratio_range(Interval(0.00123, 0.5, "BCa bootstrap")) == "0.0012x-0.50x"


def test_an_interval_beside_a_verdict_it_seems_to_contradict_says_why_both_hold():
    from dataclasses import replace

    from harness.results.analysis.resampling import Interval

    base = judge("A", [_run(i, 2, 10.0 + i) for i in range(4)], None, "B", [_run(i, 2, 30.0 + i) for i in range(4)],
                 None)
    apart = replace(base, verdict="not distinguishable", p_value=0.11, time_interval=Interval(1.2, 4.24, "BCa bootstrap"))
    assert "1.20x-4.24x" in describe(apart)
    assert "the interval leaves out 1x, yet equal speed is not ruled out" in describe(apart)
    across = replace(base, verdict="not distinguishable", p_value=0.03, time_interval=Interval(0.9, 2.0, "BCa bootstrap"))
    assert "p rules equal speed out, yet the 95% interval holds 1x, and a verdict claims no more" in describe(across)
    assert "runs per side would resolve" not in describe(across)
    plain = replace(base, verdict="faster", p_value=0.03, time_interval=Interval(1.1, 2.0, "BCa bootstrap"))
    assert "yet" not in describe(plain)


def test_an_observed_speedup_never_gets_a_zero_chance():
    """Seed 2's 1.0x lies below every pair of epoch counts' mean times; its own pair (2 -> 2 epochs) still
    produced it, so its chance counts that pair."""
    ref = [_run(1, 2, 30.0), _run(2, 2, 10.0), _run(3, 4, 40.0)]
    sub = [_run(1, 2, 5.0), _run(2, 2, 10.0), _run(3, 3, 12.0)]
    c = chances("B", sub, "A", ref, observed=None)
    assert c.seed == 2 and c.p_seed == pytest.approx(4 / 9)
    assert "a 1.0x result (seed 2: 2 -> 2 epochs) happens with probability 44%" in describe_chances(c)


def test_sides_whose_runs_all_needed_the_same_epochs_get_no_chances_over_epochs():
    ref = [_run(1, 12, 100.0), _run(2, 12, 60.0)]
    sub = [_run(1, 4, 10.0), _run(2, 4, 20.0)]
    text = describe_chances(chances("B", sub, "A", ref, observed=5.3))
    assert text.endswith("every run of a side needed the same epochs: the speedup is time per epoch, not epoch luck")
    assert "probability" not in text and "single-run pairs" not in text


def test_ninety_percent_of_pairs_on_one_value_reads_as_one_value():
    ref = [_run(i, 2, 20.0) for i in range(19)] + [_run(19, 3, 30.0)]
    sub = [_run(i, 2, 10.0) for i in range(20)]
    assert "at least 90% of single-run pairs give 2.00x" in describe_chances(chances("B", sub, "A", ref, None))


def _runs(folder, round_, failed=0):
    return [RunSummary(path=f"{folder}/result_{i}.txt", benchmark="gnmt", round=round_, folder=str(folder),
                       status="success" if i >= failed else "aborted", time_to_train_min=float(10 + i))
            for i in range(10)]


@pytest.mark.parametrize("scaling, round_, failed, said", [
    (1.02, "v3.0", 0, "olympic mean of 8 runs, x 1.02 (scaling.json)"),
    (1.02, "v3.0", 2, "void: 2 did not converge; MLPerf allows 1 such run(s); scaling.json gives 1.02"),
    (1.02, "v1.0", 0, "olympic mean of 8 runs, x 1.02 (scaling.json)"),  # as the summarizer: in every round
    (-1, "v3.0", 0, "olympic mean of 8 runs; {path} gives no positive scaling_factor (-1): not applied"),
])
def test_the_note_says_what_scaling_json_did(tmp_path, scaling, round_, failed, said):
    (tmp_path / "scaling.json").write_text(json.dumps({"scaling_factor": scaling}))
    score = round_score("gnmt", _runs(tmp_path, round_, failed))
    note = said.format(path=tmp_path / "scaling.json")
    assert score_note(score) == note and score_json(score)["note"] == note
    assert score.minutes == (None if failed else pytest.approx(14.5 * (scaling if scaling > 0 else 1)))


def test_a_verdict_on_converged_runs_alone_counts_those_and_a_seed_below_1x_keeps_its_digits():
    # two void scores: the permutation test ran on 4 and 3 converged runs, and the line said "6 and 6 runs"
    from harness.results.analysis.confidence import MEAN, Judgement
    from harness.results.analysis.chances import Chances
    from harness.results.report.verdicts import describe, describe_chances

    j = Judgement("2 CPU ranks", "1 CPU rank", (6, 6), MEAN, 0.529, None, 0.029, "slower", None, None, None, None,
                  "", None, None, resampled=(3, 4))
    assert "(no 95% interval: a bootstrap interval of a mean needs 4 runs a side, 2 CPU ranks 3 and 1 CPU rank 4 " \
           "here, permutation p=0.029, 3 and 4 converged runs of 6 and 6)" in describe(j)
    # seed 2's 0.465x read "a 0.5x result", on the far side of the expected 0.58x's neighbours
    c = Chances(subject="B", reference="A", expected=0.577, per_epoch=0.624, expected_epochs=(8.17, 8.83),
                epochs=({"8": 3, "9": 3}, {"6": 2, "8": 4}), observed=None, p_observed=None, seed=2, seed_speedup=0.465,
                seed_epochs=(6.0, 8.0), p_seed=0.167, single_range=(0.42, 0.73), left_out=0)
    assert "a 0.47x result (seed 2: 6 -> 8 epochs)" in describe_chances(c)
