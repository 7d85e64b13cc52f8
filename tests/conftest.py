"""Shared test setup: one thread per process (CI has 2 cores) and the real MLPerf fixtures."""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from pathlib import Path

import pytest

from tests.helpers import FIXTURES


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"real MLPerf v0.7 logs not found at {FIXTURES} (they live in ../shared beside the checkout)")
    return FIXTURES
