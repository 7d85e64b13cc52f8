"""Shared test setup: the thread policy runs get (harness/run/threads.py: measured now, set before
torch starts; a user's OMP_NUM_THREADS still wins) and the real MLPerf fixtures."""
from __future__ import annotations

from harness.run import threads

threads.apply_at_start("tests")

import signal  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.helpers import FIXTURES  # noqa: E402

# A suite started in the background by a shell without job control (`pytest ... &`) inherits SIGINT ignored,
# and Python then leaves it ignored in every process it starts: the tests of what Ctrl-C does would see a run
# that never hears it. A terminal's suite has Python's own handler; this gives every suite that one, and a
# handler (unlike SIG_IGN) goes back to the default in each process exec starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
