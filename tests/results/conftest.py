"""The real submission trees of MLPerf v0.5-v0.7 (../shared/fixtures/mlperf_trees), used in place."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import SHARED

TREES = SHARED / "fixtures" / "mlperf_trees"


@pytest.fixture(scope="session")
def trees_dir() -> Path:
    if not TREES.is_dir():
        pytest.skip(f"real MLPerf submission trees not found at {TREES} (they live in ../shared beside the checkout, or set HARNESS_SHARED)")
    return TREES
