"""The loop's check of the disk: a background writer (a logging handler, the heartbeat and telemetry
threads, TensorBoard's writer) that found the disk full cannot raise into the run, so it trips
harness.files' flag and this hook ends the run at the next step or evaluation (a flag: no I/O)."""
from __future__ import annotations

from harness.files import raise_if_full
from harness.observe.hooks import Hook, StepDone


class DiskCheck(Hook):
    """Ends the run at the step after a background writer found the disk full."""

    def after_step(self, done: StepDone) -> None:
        raise_if_full()

    def before_eval(self, epoch_num: float) -> None:
        raise_if_full()
