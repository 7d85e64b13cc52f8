"""A run's precision label (harness.results.read.summary): the base precision, then the path the step ran."""
from __future__ import annotations

import pytest

from harness.results.read.summary import join_label, split_label


@pytest.mark.parametrize("label, base, path", [
    ("tf32", "tf32", "eager"),
    ("amp+graph", "amp", "graph"),
    ("amp+master", "amp+master", "eager"),
    ("amp+master+graph", "amp+master", "graph"),
    ("amp+compile(reduce-overhead)", "amp", "compile(reduce-overhead)"),
    ("bf16+master+compile(reduce-overhead)+graph", "bf16+master", "compile(reduce-overhead)+graph"),
    ("tf32+compile(max-autotune+x)", "tf32", "compile(max-autotune+x)"),  # a "+" inside a compile mode stays in it
    ("amp+eager", "amp", "eager"),
])
def test_a_label_splits_into_its_base_precision_and_its_path_and_joins_back(label, base, path):
    assert split_label(label) == (base, path)
    assert join_label(base, path) == label.replace("+eager", "")
