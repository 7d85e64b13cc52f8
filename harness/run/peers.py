"""Which rank died, when a rank of an outside launcher's world (srun, submitit, torchrun) sees its
collective fail.

No harness process sits above such ranks to see one exit: when rank 1 is killed, rank 0 only sees
gloo's "Connection reset by peer" and would report itself as the failed rank. Every rank keeps a
heartbeat file while it runs (harness/observe/heartbeat.py) and removes it when it ends, even by an
exception; a rank killed outright (SIGKILL, the out-of-memory killer, a segfault) leaves its file
behind. So a file whose process is gone (this host) or that stops being rewritten (another host)
names the rank that died.

    srun -n2 python -m harness.train model=ncf device=cpu seed=1    # then kill -9 rank 1's pid
"""
from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Optional

import psutil

from harness.observe.heartbeat import beat_path
from harness.run.watchdog import _read as read_beat  # the one reader of heartbeat files


def find_dead(run_dir: Path, ranks: range, me: int, settle_s: float = 5.0,
              exit_s: float = 0.5) -> Optional[tuple[int, str]]:
    """(rank, why it is dead, in one line) for the first rank of `ranks` other than `me` that died.
    A rank on this host is judged by its process; one on another host by its heartbeat file not
    changing for `settle_s` seconds (a live rank rewrites it about once a second; no clocks compared).

    A killed process's sockets close before the kernel has made it a zombie, so the peer that sees
    the broken connection can find it still listed as running: a local rank that looks alive is
    looked at again for `exit_s` seconds before it is judged alive."""
    first: dict[int, dict] = {}
    end = time.monotonic() + settle_s
    local_end = time.monotonic() + exit_s
    while True:
        local_alive = False
        for rank in ranks:
            beat = read_beat(beat_path(run_dir, rank)) if rank != me else None
            if beat is None:
                first.pop(rank, None)  # ended and tidied up, or never started: not a death
                continue
            if beat.get("host") == socket.gethostname():
                why = _local_death(beat)
                if why is not None:
                    return rank, why
                local_alive = True
                continue
            if first.setdefault(rank, beat) != beat:
                first[rank] = {"moved": True}  # alive: its file changed
        now = time.monotonic()
        if (not first or now >= end) and (not local_alive or now >= local_end):
            break
        time.sleep(0.05 if local_alive and now < local_end else 0.5)
    for rank, beat in first.items():
        if "moved" not in beat:
            return rank, (f"its heartbeat on {beat.get('host')} (process {beat.get('pid')}) "
                          f"stopped, last seen in phase {beat.get('phase')}")
    return None


def dead_peer(run_dir: Path, world_size: int, me: int, seen: BaseException) -> Optional[tuple[int, str]]:
    """(dead rank, the run's one-line reason) when a peer's death is what `seen` (this rank's error)
    reports; the dead rank's heartbeat file, which nothing else would remove, is removed."""
    dead = find_dead(run_dir, range(world_size), me)
    if dead is None:
        return None
    rank, why = dead
    path = beat_path(run_dir, rank)
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass  # other ranks' files are still there
    # gloo's message ends in advice about remote workers: its first sentence is the fact
    return rank, f"{why}; rank {me} saw: {str(seen).splitlines()[0].split('. ')[0]}"


def _local_death(beat: dict) -> Optional[str]:
    pid = beat.get("pid")
    if not isinstance(pid, int):
        return None
    try:
        gone = psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        gone = True
    except psutil.Error:  # not ours to look at: it lives
        gone = False
    if gone:
        return (f"its process {pid} ended without a word (killed: SIGKILL, out of memory, or a crash), "
                f"last seen in phase {beat.get('phase')}")
    return None
