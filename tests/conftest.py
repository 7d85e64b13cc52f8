"""Shared test setup: the thread policy runs get (harness/run/threads.py: measured now, set before
torch starts; a user's OMP_NUM_THREADS still wins) and the real MLPerf fixtures."""
from __future__ import annotations

from harness.run import threads

threads.apply_at_start("tests")

import json  # noqa: E402
import signal  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.helpers import FIXTURES, REPO  # noqa: E402

FILE_TIMES = Path(__file__).resolve().parent / "file_times.json"

# A suite started in the background by a shell without job control (`pytest ... &`) inherits SIGINT ignored,
# and Python then leaves it ignored in every process it starts: the tests of what Ctrl-C does would see a run
# that never hears it. A terminal's suite has Python's own handler; this gives every suite that one, and a
# handler (unlike SIG_IGN) goes back to the default in each process exec starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest test files first. Each of the two workers takes whole files (--dist loadfile) in the order
    collected (--no-loadscope-reorder: xdist would otherwise order files by their count of tests, and the
    end-to-end files, few tests of many seconds each, would start last and leave the other worker idle);
    handing the longest out first keeps both busy to the end. The seconds are a whole run's, per file
    (tests/file_times.json, from scripts/tools/suite_times.py); a file not in it counts as an average one.
    The sort is stable: a file's tests keep their order."""
    times = json.loads(FILE_TIMES.read_text()) if FILE_TIMES.is_file() else {}
    typical = sum(times.values()) / len(times) if times else 0.0

    def seconds(item: pytest.Item) -> float:
        try:
            name = item.path.resolve().relative_to(REPO).as_posix()
        except ValueError:  # a test file named outside the checkout
            return typical
        return float(times.get(name, typical))

    items.sort(key=lambda item: -seconds(item))


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
