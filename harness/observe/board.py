"""TensorBoard for one run, written by rank 0 into RUN_DIR/tb.

    python -m harness.train -m model=ncf 'seed=range(1,6)'
    tensorboard --logdir outputs/sweeps/<sweep>            # one run per seed, hparams tab to compare

Per epoch: train/loss, train/lr, train/samples_per_s; per evaluation eval/<metric>, or
eval/<metric>/<part> for each part of a quality with several (x axis: epoch). Telemetry as
it is sampled (x axis: seconds since the run began): gpu<i>/util_pct, memory_used_mib, power_w,
sm_clock_mhz, temperature_c, or process/rss_mib and cpu_pct on CPU. At the end an hparams summary
(seed, world size, precision, batch, the model's hyperparameters) with time to train, epochs and
status as its metrics. All of it goes into the one folder: SummaryWriter.add_hparams would put the
hparams into a timestamped subfolder, a stray run of its own in TensorBoard's list, so the three
hparams summaries are written by hand into the run's own event file.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger("harness.tensorboard")

STATUS_CODE = {"success": 1.0, "aborted": 0.0, "failed": -1.0}  # hparams metrics must be numbers

_GPU_FIELDS = ("util_pct", "memory_used_mib", "power_w", "sm_clock_mhz", "temperature_c")
_PROCESS_FIELDS = ("rss_mib", "cpu_pct")


class Board:
    """A SummaryWriter, or nothing at all (tensorboard=false, other ranks, no tensorboard installed)."""

    def __init__(self, run_dir: Optional[Path], enabled: bool = True):
        self.writer = None
        self._lock = threading.Lock()  # the telemetry thread writes too
        if not enabled or run_dir is None:
            return
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # tensorboard is a dependency; a broken install must not stop a run
            log.warning("TensorBoard off: %s (pip install tensorboard)", err)
            return
        self.writer = SummaryWriter(log_dir=str(run_dir / "tb"))

    @property
    def enabled(self) -> bool:
        return self.writer is not None

    def epoch(self, epoch: int, *, loss: Optional[float], lr: Optional[float], throughput: Optional[float]) -> None:
        if self.writer is None:
            return
        with self._lock:
            for tag, value in (("train/loss", loss), ("train/lr", lr), ("train/samples_per_s", throughput)):
                if value is not None:
                    self.writer.add_scalar(tag, float(value), epoch)

    def quality(self, epoch: float, parts: dict[str, float], metric: str) -> None:
        """One scalar per quality part: eval/<metric> for one number, eval/<metric>/<part> for several."""
        if self.writer is None:
            return
        with self._lock:
            for part, value in parts.items():
                tag = f"eval/{metric}" if part == metric else f"eval/{metric}/{part}"
                self.writer.add_scalar(tag, float(value), int(epoch))

    def telemetry(self, sample: dict) -> None:
        """A telemetry sample (called from the sampler's thread)."""
        if self.writer is None:
            return
        step = int(round(sample.get("elapsed_s", 0)))
        with self._lock:
            for g in sample.get("gpus", []):
                for f in _GPU_FIELDS:
                    if g.get(f) is not None:
                        self.writer.add_scalar(f"gpu{g['index']}/{f}", float(g[f]), step)
            proc = sample.get("process")
            if proc:
                for f in _PROCESS_FIELDS:
                    if proc.get(f) is not None:
                        self.writer.add_scalar(f"process/{f}", float(proc[f]), step)

    def hparams(self, hparams: dict[str, Any], metrics: dict[str, Optional[float]]) -> None:
        """The run's row in TensorBoard's hparams tab, in the run's own folder."""
        if self.writer is None:
            return
        from torch.utils.tensorboard.summary import hparams as hparams_summary

        clean = {k: _hparam_value(v) for k, v in hparams.items() if v is not None}
        values = {k: float(v) for k, v in metrics.items() if v is not None}
        exp, ssi, sei = hparams_summary(clean, values)
        with self._lock:
            for summary in (exp, ssi, sei):
                self.writer.file_writer.add_summary(summary)
            for k, v in values.items():
                self.writer.add_scalar(k, v)

    def close(self) -> None:
        if self.writer is not None:
            with self._lock:
                self.writer.close()
            self.writer = None


def _hparam_value(value: Any):
    """hparams accept numbers, strings and booleans: anything else is shown as its text."""
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
