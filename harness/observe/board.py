"""TensorBoard for one run, written by rank 0 into RUN_DIR/tb.

    python -m harness.train -m model=ncf 'seed=range(1,6)'
    tensorboard --logdir outputs/sweeps/<sweep>            # one run per seed, hparams tab to compare

Per epoch: train/loss (and train/loss/<term> for each named term of a model's loss), train/lr,
train/samples_per_s, train/data_wait_s; per evaluation eval/<metric>, or eval/<metric>/<part> for
each part of a quality with several (x axis: epoch). Telemetry as
it is sampled (x axis: seconds since the run began): gpu<i>/util_pct, memory_used_mib, power_w,
sm_clock_mhz, temperature_c, or process/rss_mib and cpu_pct on CPU. At the end an hparams summary
(seed, world size, precision, batch, the model's hyperparameters) with time to train, epochs and
status as its metrics. All of it goes into the one folder: SummaryWriter.add_hparams would put the
hparams into a timestamped subfolder, a stray run of its own in TensorBoard's list, so the three
hparams summaries are written by hand into the run's own event file.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from harness import files
from harness.observe.console import FILE_ONLY
from harness.observe.hooks import Hook

if TYPE_CHECKING:
    from harness.record import Epoch

log = logging.getLogger("harness.tensorboard")


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
        try:
            self.writer = SummaryWriter(log_dir=str(run_dir / "tb"))
        except UnicodeError:  # it names its file in UTF-8, the folder in the locale's encoding: one lacks the path
            log.warning("TensorBoard off: its writer cannot name a file under %s in this locale; run with a "
                        "UTF-8 one (PYTHONUTF8=1, or LC_ALL=C.UTF-8) for tb/", run_dir)
            with contextlib.suppress(OSError):
                (run_dir / "tb").rmdir()  # made before the writer failed, and empty: no tb/ that holds nothing
            return
        _quiet_writer_thread()

    @property
    def enabled(self) -> bool:
        return self.writer is not None

    def epoch(self, epoch: float, *, loss: Optional[float], lr: Optional[float], throughput: Optional[float],
              data_wait_s: Optional[float] = None, terms: Optional[dict[str, Optional[float]]] = None) -> None:
        scalars = {"train/loss": loss, "train/lr": lr, "train/samples_per_s": throughput,
                   "train/data_wait_s": data_wait_s, **{f"train/loss/{k}": v for k, v in (terms or {}).items()}}
        self._scalars({tag: v for tag, v in scalars.items() if v is not None}, int(epoch))

    def quality(self, epoch: float, parts: dict[str, float], metric: str) -> None:
        """One scalar per quality part: eval/<metric> for one number, eval/<metric>/<part> for several."""
        self._scalars({f"eval/{metric}" if part == metric else f"eval/{metric}/{part}": value
                       for part, value in parts.items()}, int(epoch))

    def _scalars(self, values: dict[str, float], step: int) -> None:
        with self._lock:
            if self.writer is None:
                return
            try:
                for tag, value in values.items():
                    self.writer.add_scalar(tag, float(value), step)
            except OSError as err:
                self._lost(err)

    def _lost(self, err: OSError) -> None:
        """TensorBoard's writer thread failed (its error surfaces at the next write): a full disk ends
        the run at its next step; anything else turns TensorBoard off, never the run."""
        if files.is_full(err):
            files.trip(self.writer.get_logdir() if self.writer is not None else "tb", err)
        else:
            log.warning("TensorBoard off: %s", err)
        self.writer = None

    def telemetry(self, sample: dict) -> None:
        """A telemetry sample (called from the sampler's thread)."""
        step = int(round(sample.get("elapsed_s", 0)))
        values = {f"gpu{g['index']}/{f}": g[f] for g in sample.get("gpus", []) for f in _GPU_FIELDS
                  if g.get(f) is not None}
        proc = sample.get("process") or {}
        values.update({f"process/{f}": proc[f] for f in _PROCESS_FIELDS if proc.get(f) is not None})
        self._scalars(values, step)

    def hparams(self, hparams: dict[str, Any], metrics: dict[str, Optional[float]]) -> None:
        """The run's row in TensorBoard's hparams tab, in the run's own folder."""
        if self.writer is None:
            return
        from torch.utils.tensorboard.summary import hparams as hparams_summary

        clean = {k: _hparam_value(v) for k, v in hparams.items() if v is not None}
        values = {k: float(v) for k, v in metrics.items() if v is not None}
        exp, ssi, sei = hparams_summary(clean, values)
        with self._lock:
            if self.writer is None or self.writer.file_writer is None:
                return
            try:
                for summary in (exp, ssi, sei):
                    self.writer.file_writer.add_summary(summary)
                for k, v in values.items():
                    self.writer.add_scalar(k, v)
            except OSError as err:
                self._lost(err)

    def close(self) -> None:
        with self._lock:
            if self.writer is not None:
                try:
                    self.writer.close()
                except OSError as err:
                    self._lost(err)
            self.writer = None


class BoardHook(Hook):
    """The loop's side of TensorBoard: each epoch's figures and each evaluation's quality."""

    def __init__(self, board: Board, metric: str, lr: Callable[[], Optional[float]]):
        self.board, self.metric, self.lr = board, metric, lr

    def after_epoch(self, epoch: "Epoch") -> None:
        self.board.epoch(epoch.epoch, loss=epoch.train_loss, lr=self.lr(), throughput=epoch.throughput,
                         data_wait_s=epoch.data_wait_s, terms=epoch.loss_terms)

    def after_eval(self, epoch_num: float, scalars: dict[str, float], seconds: float) -> None:
        self.board.quality(epoch_num, scalars, self.metric)


def _hparam_value(value: Any):
    """hparams accept numbers, strings and booleans: anything else is shown as its text."""
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _quiet_writer_thread() -> None:
    """TensorBoard's writer thread keeps its OSError for the next write, where `Board._lost` handles it
    (a full disk ends the run with one line), and then re-raises it, so Python's default thread hook
    would also print its traceback on the console: such errors go to train.log instead. Installed once;
    every other thread's error reaches the hook that was there before."""
    previous = threading.excepthook
    if getattr(previous, "harness_board", False):
        return

    def hook(args: Any) -> None:
        if type(args.thread).__module__.startswith("tensorboard.") and isinstance(args.exc_value, OSError):
            log.warning("TensorBoard's writer thread stopped: %s", args.exc_value, extra=FILE_ONLY)
            return
        previous(args)

    hook.harness_board = True  # type: ignore[attr-defined]
    threading.excepthook = hook
