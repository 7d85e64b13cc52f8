"""A daemon thread that calls a function every few seconds until stopped: the heartbeat, the host
load monitor and the watchdog each run one (telemetry keeps its own, with its window bookkeeping).

    python -c "from harness.observe.ticker import Ticker; import time; t = Ticker(0.5, lambda: print('tick')).start(); time.sleep(2); t.stop()"
"""
from __future__ import annotations

import threading
from typing import Callable, Optional


class Ticker:
    """`fn()` every `interval_s` seconds in a daemon thread until `stop()` or until fn returns True."""

    def __init__(self, interval_s: float, fn: Callable[[], Optional[bool]], name: str = "harness-ticker"):
        self.interval_s = interval_s
        self.fn = fn
        self.name = name
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "Ticker":
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self.fn():
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval_s + 5)
