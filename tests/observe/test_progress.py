"""The console's figures: a slow model's rate (Llama 2 70B LoRA's 0.76 sequences/s on one H200) is read as
it is, not rounded to a whole 1."""
from __future__ import annotations

from harness.observe.progress import figure


def test_a_rate_under_a_hundred_keeps_three_significant_figures_and_a_large_one_is_grouped():
    assert [figure(x) for x in (0.7593866, 7.25, 73.735, 163901.77, 0.99999, 57.0)] == \
        ["0.759", "7.25", "73.7", "163,902", "1.00", "57.0"]
