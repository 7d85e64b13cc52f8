"""Each rank's heartbeat: a small file in the run directory that says the rank is alive and how far
it got, rewritten about once a second by a daemon thread.

The loop counts its training steps and says when it evaluates (`HeartbeatHook`, a loop hook); the
thread writes `.heartbeat/rank_<r>.json` = {rank, pid, host, time, phase, progress}. The process
that started the ranks reads these files (harness/run/watchdog.py): a rank whose file stops changing
(the process is stopped or wedged) or whose step count stands still while it trains ends the run
with "rank N made no progress for S s". A rank that evaluates, initialises or compiles is judged on being
alive, so a slow evaluation is safe at any limit, and on its waits for a batch from loader workers
(`waiting_s`): one that lasts the limit (a worker stopped or stuck in a read) stalls it in any phase. The files are removed when the rank ends.

A compile inside the training loop (mode=throughput's first steps, a recompile for a new shape, a lazily
compiled backward, a CUDA graph recorded by compile_mode=reduce-overhead) is phase "compile" while it lasts:
Inductor's max-autotune benchmarks kernels for minutes (ResNet-50's took more than 300 s on an H100), and a
rank doing so is working, not hung (for up to 4 limits: watchdog.COMPILE_LIMITS). Dynamo's compile callbacks
say when (`watch_compiles`); torch has no public hook for it, so where that private API is missing the compile
counts as a training step's time, as before.

`HeartbeatHook` is what the loop calls (harness/observe/hooks.py).

    python -m harness.train model=ncf device=cpu gpus=2 progress_timeout_s=300
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Optional

from harness import files
from harness.interface import workers
from harness.observe.hooks import Hook, StepDone
from harness.observe.ticker import Ticker

FOLDER = ".heartbeat"


def beat_path(run_dir: Path, rank: int) -> Path:
    return run_dir / FOLDER / f"rank_{rank}.json"


class Heartbeat:
    def __init__(self, run_dir: Path, rank: int, interval_s: float = 1.0):
        self.path = beat_path(run_dir, rank)
        self.rank = rank
        self.interval_s = interval_s
        self.progress = 0  # training steps so far: only this process's main thread adds to it
        self.phase = "init"
        self.compiling = False  # set and cleared by Dynamo's callbacks in the compiling thread (watch_compiles)
        self._ticker = Ticker(interval_s, self._write, "harness-heartbeat")

    def start(self) -> "Heartbeat":
        self.path.parent.mkdir(exist_ok=True)
        self._write()
        self._ticker.start()
        return self

    def _write(self) -> None:
        beat = {"rank": self.rank, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time(),
                "phase": "compile" if self.compiling else self.phase, "progress": self.progress}
        waiting = workers.waiting_s()
        if waiting is not None:  # for a loader worker's batch: judged in every phase (harness/run/watchdog.py)
            beat["waiting_s"] = round(waiting, 1)
        try:
            files.write_atomic(self.path, json.dumps(beat))  # a reader never sees half a beat
        except OSError as err:
            if files.is_full(err):
                files.trip(self.path, err)  # the run ends at its next step (disk.DiskCheck)

    def stop(self) -> None:
        self._ticker.stop()
        self.path.unlink(missing_ok=True)
        try:
            self.path.parent.rmdir()  # the last rank to end removes the folder
        except OSError:
            pass


_beat: Optional[Heartbeat] = None


def start(run_dir: Path, rank: int) -> Heartbeat:
    global _beat
    _beat = Heartbeat(run_dir, rank).start()
    return _beat


def stop() -> None:
    global _beat
    _unwatch_compiles()
    if _beat is not None:
        _beat.stop()
        _beat = None


def _compile_started(*_args: object) -> None:
    if _beat is not None:
        _beat.compiling = True


def _compile_ended(*_args: object) -> None:
    if _beat is not None:
        _beat.compiling = False


def watch_compiles() -> bool:
    """Mark this rank's compiles as phase "compile" through Dynamo's start and end callbacks; whether it could.
    Importing Dynamo costs a run nothing: torch's optimizers import it at their first step."""
    try:
        import torch._dynamo.callback as dynamo_callback

        handler = dynamo_callback.callback_handler
        if _compile_started not in handler.start_callbacks:
            handler.register_start_callback(_compile_started)
            handler.register_end_callback(_compile_ended)
    except (ImportError, AttributeError):  # a torch whose private callback API changed: compiles count as step time
        return False
    return True


def _unwatch_compiles() -> None:
    dynamo = sys.modules.get("torch._dynamo")
    handler = getattr(getattr(dynamo, "callback", None), "callback_handler", None)
    for remove, callback in (("remove_start_callback", _compile_started), ("remove_end_callback", _compile_ended)):
        try:
            getattr(handler, remove)(callback)
        except (AttributeError, ValueError):  # never registered, or no such API
            pass
    _compile_ended()


def tick() -> None:
    """One training step done (a no-op where no heartbeat runs: tests, scripts)."""
    if _beat is not None:
        _beat.progress += 1


def set_phase(name: str) -> None:
    """init, train or eval: only "train" is held to the step count (and a compile is "compile" while it lasts)."""
    if _beat is not None:
        _beat.phase = name


class HeartbeatHook(Hook):
    """The loop's side of the heartbeat: steps counted, evaluations judged on liveness alone."""

    def before_run(self) -> None:
        watch_compiles()  # the build and the warm-up (phase init) are behind: a model that compiles imported Dynamo
        set_phase("train")

    def after_step(self, done: StepDone) -> None:
        tick()

    def before_eval(self, epoch_num: float) -> None:
        set_phase("eval")

    def after_eval(self, epoch_num: float, scalars: dict[str, float], seconds: float) -> None:
        set_phase("train")
