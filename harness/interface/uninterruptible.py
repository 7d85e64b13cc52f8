"""A third-party call that catches every exception, KeyboardInterrupt included, run with Ctrl-C and SIGTERM
held until it returns: a signal landing inside its bare `except:` would be swallowed (the run goes on as if
Ctrl-C had not been pressed) and would leave its result half-computed (pycocotools' COCOeval.accumulate
fills its precision table under `except: pass`, so an interrupted fill is a lower mAP, not an error).
Only for short calls: the signal waits for the whole call.

    from harness.interface.uninterruptible import uninterruptible
    with uninterruptible():
        evaluator.accumulate()
"""
from __future__ import annotations

from contextlib import AbstractContextManager

from harness.signals import shielded


def uninterruptible() -> AbstractContextManager[None]:
    """Ctrl-C and SIGTERM held for the block and delivered as it ends (on the main thread; elsewhere no
    signal is raised anyway)."""
    return shielded()
