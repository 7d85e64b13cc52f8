"""Hold off Ctrl-C and SIGTERM while a run writes its closing records.

A terminal's Ctrl-C reaches every process of the group, and the elastic agent then forwards its
own signal to the ranks: a rank already ending its MLPerf log on the first signal would be cut off
by the second, leaving a log without run_stop. Inside `shielded()` such signals are held and, when
nothing else is already unwinding the stack, delivered once the block is done.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def shielded() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM held (a no-op off the main thread, where Python
    cannot install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.getsignal(sig) for sig in _HELD}
    for sig in _HELD:
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    unwinding = True
    try:
        yield
        unwinding = False
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        # An exception on its way out already ends the run: a held signal would only replace it.
        if pending and not unwinding:
            signal.raise_signal(pending[0])
