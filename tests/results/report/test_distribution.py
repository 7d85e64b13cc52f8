"""Convergence figures as a reader takes them in: the runs at each value while there are few values, else
the median, the range, the runs and an eight-bin histogram; never a list of ten seven-digit sample counts."""
from __future__ import annotations

from harness.results.report.distribution import histogram, summary


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
