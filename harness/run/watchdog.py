"""Ends a run whose rank stopped making progress, naming the rank, instead of waiting for the
process group's own timeout (600 s, blamed on whichever rank was receiving).

The process that started the ranks (the elastic launcher; with torchrun or srun, each node's local
rank 0 for the node's other ranks; a 1-rank run, from a thread of its own process) reads every
rank's heartbeat (harness/observe/heartbeat.py) once a second. A rank is stalled when, for `progress_timeout_s` seconds, its heartbeat file did not
change (the process is stopped, wedged or gone silent) or, while it trains, its step count did not
move; while any rank compiles (phase "compile": Inductor's autotuning can take minutes), no rank's step count
is held to the limit, only its liveness, for up to COMPILE_LIMITS limits. Ranks that wait in a collective for a stalled one stall too: the watchdog names the ranks
whose heartbeat went quiet, else the ranks that got the least far. It then stops those ranks (SIGCONT and SIGTERM, SIGKILL after
`grace_s`; a 1-rank run gets SIGTERM alone, which ends its wait), the launcher tears the rest down
as for any failed rank, and the run fails with "rank N made no progress for S s".

    python -m harness.train model=ncf device=cpu gpus=2 progress_timeout_s=60
    python -m harness.train model=resnet progress_timeout_s=60      # one rank: watched too
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import psutil

from harness import files
from harness.observe import console
from harness.observe.heartbeat import beat_path
from harness.observe.ticker import Ticker

log = logging.getLogger("harness.watchdog")

# A compile (phase "compile") is judged on liveness for up to this many limits (20 minutes at the default 300 s:
# max-autotune's kernel benchmarks take minutes), then as a step that never ended: a wedged compile worker pool
# would otherwise hold a run, and its GPUs, for ever.
COMPILE_LIMITS = 4


@dataclass
class _Seen:
    beat: dict
    changed_at: float  # the watchdog's clock when the file last changed
    progressed_at: float  # ... when the step count last moved, or the rank was not training
    compiling_since: Optional[float] = None  # ... when the rank's current compile began (None: not compiling)
    stopping: bool = False

    def compiled_s(self, now: float) -> float:
        return 0.0 if self.compiling_since is None else now - self.compiling_since


@dataclass
class Watchdog:
    run_dir: Path
    ranks: Iterable[int]
    limit_s: float
    grace_s: float = 10.0
    interval_s: float = 1.0
    verdict: Optional[tuple[int, str]] = None  # (first stalled rank, the one-line message)
    _seen: dict[int, _Seen] = field(default_factory=dict)
    _ticker: Optional[Ticker] = None
    _notes: list[Path] = field(default_factory=list)

    def start(self) -> "Watchdog":
        self.ranks = list(self.ranks)
        self._ticker = Ticker(self.interval_s, lambda: self.check(time.monotonic()) is not None,
                              "harness-watchdog").start()
        return self

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        for note in self._notes:
            note.unlink(missing_ok=True)
            try:
                note.parent.rmdir()  # the heartbeat folder, once every rank's file is gone
            except OSError:
                pass

    def __enter__(self) -> "Watchdog":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def check(self, now: float) -> Optional[tuple[int, str]]:
        """One look at every rank's heartbeat; returns (and acts on) a verdict once there is one."""
        for rank in self.ranks:
            beat = _read(beat_path(self.run_dir, rank))
            if beat is None:
                continue  # not started yet, or already ended: the launcher sees a rank that exits
            seen = self._seen.get(rank)
            if seen is None:
                seen = self._seen[rank] = _Seen(beat, now, now)
            elif beat != seen.beat:
                if beat.get("progress") != seen.beat.get("progress") or beat.get("phase") != "train":
                    seen.progressed_at = now
                seen.beat, seen.changed_at = beat, now
            compiling = seen.beat.get("phase") == "compile"
            seen.compiling_since = (now if seen.compiling_since is None else seen.compiling_since) if compiling else None
        compile_limit_s = COMPILE_LIMITS * self.limit_s
        if any(s.compiling_since is not None and now - s.changed_at < self.limit_s and s.compiled_s(now) < compile_limit_s
               for s in self._seen.values()):
            for s in self._seen.values():
                s.progressed_at = now  # the ranks that compiled sooner wait in a collective for the one compiling
        stalled = {r: s for r, s in self._seen.items()
                   if now - s.changed_at >= self.limit_s or now - s.progressed_at >= self.limit_s
                   or _waited(s.beat) >= self.limit_s or s.compiled_s(now) >= compile_limit_s}
        if not stalled or self.verdict is not None:
            return self.verdict
        # A rank whose heartbeat went quiet is the cause: the live ones without steps are most
        # likely waiting for it in a collective. Else the ranks that got the least far.
        quiet = {r: s for r, s in stalled.items() if now - s.changed_at >= 3 * self.interval_s}
        candidates = quiet or stalled
        least = min(s.beat.get("progress", 0) for s in candidates.values())
        culprits = sorted(r for r, s in candidates.items() if s.beat.get("progress", 0) == least)
        who = f"rank {culprits[0]}" if len(culprits) == 1 else "ranks " + ", ".join(map(str, culprits))
        why = [_state(self._seen[r]) or (f"compiling for {self._seen[r].compiled_s(now):.0f} s, the most a compile "
                                          f"may take: {COMPILE_LIMITS} x the limit"
                                          if self._seen[r].compiled_s(now) >= compile_limit_s else "")
               for r in culprits]
        self.verdict = (culprits[0], f"{who} made no progress for {self.limit_s:g} s"
                        + (f" ({'; '.join(w for w in why if w)})" if any(why) else ""))
        # the run's end says the verdict (the launcher raises it as the failed rank's): the console gets that one line
        log.error("%s: stopping the run", self.verdict[1], extra=console.FILE_ONLY)
        for r in culprits:
            self._stop_rank(r, self._seen[r])
        return self.verdict

    def _stop_rank(self, rank: int, seen: _Seen) -> None:
        pid = seen.beat.get("pid")
        if not isinstance(pid, int) or seen.beat.get("host") != socket.gethostname() or seen.stopping:
            return
        seen.stopping = True
        # the rank's MLPerf log ends with the verdict, not with the SIGTERM that carries it (which the report
        # would read as a user's stop); the rank reads the note as it ends (stop_note), the launcher's stop()
        # removes one a rank killed before it could read it
        note = _note_path(self.run_dir, rank)
        try:
            files.write_atomic(note, self.verdict[1] if self.verdict else "made no progress")
            self._notes.append(note)
        except OSError:
            pass  # the log then says SIGTERM, and result.json the verdict
        if pid == os.getpid():
            # a 1-rank run watches itself: SIGTERM breaks the wait it is stuck in (a read of a FIFO, a
            # worker that never answers) and the run ends with its record; SIGKILL would lose that
            _send(pid, signal.SIGTERM)
            return
        for sig in (signal.SIGCONT, signal.SIGTERM):  # a stopped process handles SIGTERM only once resumed
            _send(pid, sig)
        kill = threading.Timer(self.grace_s, _send, (pid, signal.SIGKILL))
        kill.daemon = True  # must not keep this process alive once the run is over
        kill.start()


def _waited(beat: dict) -> float:
    """Seconds the rank has waited for its current batch from loader workers (0: not waiting). An evaluation
    is judged on this alone: no step count moves while it runs."""
    waited = beat.get("waiting_s")
    return float(waited) if isinstance(waited, (int, float)) else 0.0


def _note_path(run_dir: Path, rank: int) -> Path:
    return beat_path(run_dir, rank).with_name(f"stopped_rank_{rank}.txt")


def stop_note(run_dir: Path, rank: int) -> Optional[str]:
    """The verdict the watchdog left for `rank` before its SIGTERM (read once: the note is removed), else None."""
    note = _note_path(run_dir, rank)
    try:
        text = note.read_text(errors="replace").strip()
    except OSError:
        return None
    note.unlink(missing_ok=True)
    return text or None


def _read(path: Path) -> Optional[dict]:
    try:
        beat = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return beat if isinstance(beat, dict) else None


def _state(seen: _Seen) -> str:
    """What the kernel says about a silent rank's process (this host only)."""
    pid = seen.beat.get("pid")
    if not isinstance(pid, int) or seen.beat.get("host") != socket.gethostname():
        return ""
    try:
        state = psutil.Process(pid).status()
    except psutil.Error:
        return ""
    names = {psutil.STATUS_STOPPED: "stopped (SIGSTOP?)", psutil.STATUS_TRACING_STOP: "stopped by a debugger",
             psutil.STATUS_DISK_SLEEP: "waiting on a device or disk", psutil.STATUS_ZOMBIE: "exited",
             psutil.STATUS_RUNNING: "running", psutil.STATUS_SLEEPING: "sleeping"}
    waited = f", waiting {_waited(seen.beat):g} s for a batch from its loader workers" if _waited(seen.beat) else ""
    return f"process {pid} is {names.get(state, state)}, last phase {seen.beat.get('phase')}{waited}"


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
