"""The live progress display: epoch, step, loss, throughput and ETAs.

On a terminal one line is redrawn in place a few times a second; elsewhere (CI, a pipe, a SLURM
log) a plain line is logged every `log_every` seconds. Reading the loss waits for the device, so
the loss is read only when a line is drawn, never on every step. A loop hook (harness/observe/hooks.py).

    python -m harness.train model=ncf seed=1       # the line it draws
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Callable, Optional, TextIO

from harness.observe.hooks import EpochStats, Hook, StepDone

log = logging.getLogger("harness.progress")


def _clock(seconds: Optional[float]) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def figure(value: float) -> str:
    """A rate as the console's result lines print it: whole and grouped from 100 up (163,902), three
    significant figures under it with their trailing zeros, so a slow model's 0.759 sequences/s does not
    read as 1, nor 0.99999 as 1."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:#.3g}"


def _rate(value: Optional[float], unit: str) -> str:
    if value is None:
        return f"-- {unit}/s"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix} {unit}/s"
    return f"{value:.1f} {unit}/s"


class Progress(Hook):
    def __init__(
        self,
        enabled: bool,
        max_epochs: int,
        unit: str,
        stream: TextIO = sys.stdout,
        redraw_every: float = 0.5,
        log_every: float = 30.0,
        world_size: int = 1,
    ):
        self.enabled = enabled
        self.world_size = world_size  # ranks step in lockstep: samples of all = this rank's x world
        self.max_epochs = max_epochs
        self.unit = unit
        self.stream = stream
        self.tty = enabled and stream.isatty()
        self.redraw_every = redraw_every if self.tty else log_every
        self.epoch = 0
        self.steps_in_epoch: Optional[int] = None
        self._run_t0 = time.monotonic()
        self._epoch_t0 = self._run_t0
        self._last_draw = self._run_t0
        self._epoch_seconds: list[float] = []  # wall time of finished epochs, evaluation included
        self._drawn = False

    # -- the hook ---------------------------------------------------------------------------------
    def before_epoch(self, epoch: int, steps: Optional[int]) -> None:
        self.epoch, self.steps_in_epoch = epoch, steps
        self._epoch_t0 = self._last_draw = time.monotonic()

    def after_step(self, done: StepDone) -> None:
        self.draw(done.step, done.epoch_samples * self.world_size, done.loss.item)

    def end_epoch(self, stats: EpochStats) -> None:
        self._epoch_seconds.append(time.monotonic() - self._epoch_t0)
        self.clear()

    def before_eval(self, epoch_num: float) -> None:
        self.clear()  # the evaluation's line goes below, not into the progress line

    def after_run(self) -> None:
        self.clear()

    # -- the line ---------------------------------------------------------------------------------
    def draw(self, step: int, samples: int, read_loss: Callable[[], float]) -> None:
        """Called every step; draws only when the redraw interval has passed."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last_draw < self.redraw_every:
            return
        self._last_draw = now
        elapsed = now - self._epoch_t0
        rate = samples / elapsed if elapsed > 0 else None
        loss = read_loss()  # sync point: waits for the device, hence only at draw time
        total = self.steps_in_epoch
        where = f"step {step}/{total} {100 * step / total:3.0f}%" if total else f"step {step}"
        epoch_eta = elapsed * (total - step) / step if total and step else None
        line = (
            f"epoch {self.epoch}/{self.max_epochs}  {where}  loss {loss:.4f}  "
            f"{_rate(rate, self.unit)}  epoch ETA {_clock(epoch_eta)}  "
            f"cap ETA {_clock(self._cap_eta(elapsed, epoch_eta))}"
        )
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self.stream.flush()
            self._drawn = True
        else:
            log.info(line)

    def clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False

    def _cap_eta(self, elapsed: float, epoch_eta: Optional[float]) -> Optional[float]:
        """Time left if the run goes on to max_epochs (it stops earlier at the target)."""
        if epoch_eta is None:
            return None
        per_epoch = (
            sum(self._epoch_seconds) / len(self._epoch_seconds) if self._epoch_seconds else elapsed + epoch_eta
        )
        return epoch_eta + per_epoch * (self.max_epochs - self.epoch)
