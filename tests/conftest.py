"""Shared test setup: the thread policy runs get (harness/run/threads.py: measured now, set before
torch starts; a user's OMP_NUM_THREADS still wins) and the real MLPerf fixtures."""
from __future__ import annotations

from harness.run import threads

threads.apply_at_start("tests")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.helpers import FIXTURES  # noqa: E402


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"real MLPerf v0.7 logs not found at {FIXTURES} (they live in ../shared beside the checkout, or in $HARNESS_SHARED)")
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _published_registry() -> None:
    """In-process tests read logs as every command does: with the registry's table handed to results/
    (harness.registry.publish; results/ itself never imports the registry)."""
    from harness import registry

    registry.publish()
