"""A DataLoader's worker processes: how they start, take Ctrl-C and SIGTERM, and stop, the same for
every model's loaders (harness.interface.loader's, and a model's own DataLoader).

    loader = DataLoader(dataset, num_workers=4, **worker_options(4, stop_with_parent))
    for batch in start_workers(loader): ...        # the session calls stop_workers() as the run ends

Ctrl-C and SIGTERM reach every process of the group (a terminal, `timeout`, SLURM): the workers leave
them to the training process, which stops them as it ends the run, so that a stopped run ends with
its one line, at once.
"""
from __future__ import annotations

import errno
import multiprocessing
import os
import signal
import sys
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Iterator, Optional

from harness.interface.contract import DataError
from harness.signals import forking_workers, shielded


def start_workers(batches: Iterable[Any]) -> Iterator[Any]:
    """iter(batches), its worker processes then stopped by `stop_workers()` as the run ends. Ctrl-C and
    SIGTERM are held until it returns: a DataLoader's first iterator starts its worker processes, their
    queues and the pin thread, and a signal's exception raised halfway through left a half-built
    iterator, whose teardown at exit printed a traceback after the run's one line ("Exception ignored
    in: ..._MultiProcessingDataLoaderIter.__del__"). A worker is born with both signals blocked: torch's
    own SIGTERM handler, installed before worker_init_fn, ends a worker at a group's SIGTERM (`timeout`,
    SLURM), which DataLoader then reports as a crash; the loader's worker_init_fn must be
    `stop_with_parent` or call it, which lets them through to the handlers it installs."""
    with shielded(), forking_workers():
        try:
            it = iter(batches)
        except OSError as err:  # its queues' semaphores live in /dev/shm too
            if err.errno not in _NO_SHM:
                raise
            _disarm(err)
            raise SharedMemoryShort(f"{err.strerror or err}") from None
        if hasattr(it, "_shutdown_workers"):  # a DataLoader's iterator with worker processes
            _started.add(it)  # before a held signal is raised, as the block ends
            return _Waits(it)
    return it


_started: "weakref.WeakSet[Any]" = weakref.WeakSet()
_waiting_since: Optional[float] = None  # time.monotonic() when the training process began waiting for a batch


class _Waits:
    """A worker loader's batches, each wait for one timed: a wait that never ends (a worker stopped or stuck
    in a read) is how an evaluation hangs, where no step count stands still to say so (the heartbeat
    carries the wait, harness/run/watchdog.py judges it in every phase)."""

    def __init__(self, it: Iterator[Any]):
        self._it = it

    def __iter__(self) -> "_Waits":
        return self

    def __next__(self) -> Any:
        global _waiting_since
        _waiting_since = time.monotonic()
        try:
            return next(self._it)
        except RuntimeError as err:  # torch's words, raised here or re-raised from a worker with its traceback
            cause = next((line for line in reversed(str(err).splitlines()) if "shared memory" in line), None)
            if cause is None:
                raise
            raise SharedMemoryShort(cause.split("Error: ", 1)[-1].strip()) from None
        finally:
            _waiting_since = None


_NO_SHM = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT}


class SharedMemoryShort(DataError):
    """The loader's worker processes hand their batches (and their queues' locks) over in shared memory,
    /dev/shm, which is too small or cannot be written here (a container's default is 64 MB). The message
    says where the room is and both ways out; without it the run ended saying the disk holding the run's
    folder was full, or with torch's own line that names no fix."""

    def __init__(self, cause: str):
        super().__init__(f"the data loader's worker processes cannot share their batches ({cause}): they hand them "
                         f"over in /dev/shm, {_shm_room()} here; make it larger and writable (docker run --shm-size=2g, or a "
                         "larger tmpfs on /dev/shm), or read in the training process with the model's workers option "
                         "at 0 (model.workers=0 where it has one: python -m harness.train --help model=NAME)")


def _shm_room() -> str:
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return "which is missing"
    free, size = (f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"
                  for n in (st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize))
    return f"{free} free of {size}" + (", read-only" if st.f_flag & os.ST_RDONLY else "")


def _disarm(err: BaseException) -> None:
    """DataLoader's iterator that failed in its __init__ has no `_shutdown` yet, and its __del__ then printed an
    "Exception ignored in ... __del__" traceback after the run's one line: marked as shut down, it is quiet
    (workers it started already are daemons, ended as this process ends)."""
    tb = err.__traceback__
    while tb is not None:
        it: Any = tb.tb_frame.f_locals.get("self")
        if hasattr(it, "_shutdown_workers") and not hasattr(it, "_shutdown"):
            it._shutdown = True
        tb = tb.tb_next


def waiting_s() -> Optional[float]:
    """How long the training process has been waiting for a loader worker's batch now, or None."""
    since = _waiting_since
    return None if since is None else time.monotonic() - since


def stop_workers() -> None:
    """Stop the worker processes of every iterator `start_workers` made that is still alive, and their
    queues' feeder threads, now (the session calls it as a run ends). Left to the collector, a stopped
    run's iterators (held in cycles by its exception's frames) were finalized in any order: a queue's
    pipe closed by its Connection's finalizer while its feeder thread still wrote to it, which printed
    "Bad file descriptor" tracebacks after the run's one line in about one stopped run in ten.
    `_shutdown_workers` is DataLoader's own shutdown (done event, queues closed, workers joined), which
    runs once per iterator; torch has no public call for it."""
    for it in list(_started):
        workers = list(getattr(it, "_workers", []))
        it._shutdown_workers()
        for worker in workers:
            if worker.is_alive():  # stopped (SIGSTOP) or deaf to DataLoader's SIGTERM: multiprocessing's exit
                worker.kill()  # would join it forever, and a stopped run never end
                worker.join(timeout=5)
    _started.clear()


def stop_with_parent(worker_id: int = 0) -> None:
    """A DataLoader worker's signals: Ctrl-C and SIGTERM reach every process of the group (a terminal,
    `timeout`, SLURM), and the training process stops its workers itself as it ends the run (as
    harness.signals.leave_signals_to_parent has the harness's own workers do). Killed by the signal
    first, a worker would be reported by DataLoader's SIGCHLD handler as a crash ("DataLoader worker ...
    is killed by signal: Terminated"), replacing the run's own stop: exit 1 and a traceback instead of one
    line and 143; and a worker gone at once breaks the queues the training process is closing (tracebacks
    after that line). So Ctrl-C is ignored here, and a first SIGTERM leaves the worker STOP_GRACE_S to be
    stopped by the training process before it ends itself; a second (DataLoader's own shutdown sends one
    to a worker that did not stop: one stuck in a read) ends it at once. Either way with status 0, which
    DataLoader does not report. A loader that needs no seeding passes this as its worker_init_fn."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))  # held by start_workers
    quiet_handover()


def quiet_handover() -> None:
    """A worker hands each batch's shared-memory file descriptors to the training process through
    multiprocessing's resource sharer, whose server thread runs in the worker. A training process
    stopped mid-handover (Ctrl-C or SIGTERM lands in its receiving call) drops the connection, and the
    worker's thread printed "ConnectionResetError: Connection reset by peer" after the run's one line
    (once in about forty stopped runs on a busy 2-core host). That thread catches its own errors and
    hands them to `sys.excepthook` (it never dies, so `threading.excepthook` is not called); both hooks
    are wrapped here. That error of that thread only says the training process left, and is dropped;
    anything else is printed as before."""
    global _previous_excepthook, _previous_sys_excepthook
    if threading.excepthook is not _quiet_handover:
        _previous_excepthook, threading.excepthook = threading.excepthook, _quiet_handover
    if sys.excepthook is not _quiet_sys_handover:
        _previous_sys_excepthook, sys.excepthook = sys.excepthook, _quiet_sys_handover


_previous_excepthook = threading.excepthook
_previous_sys_excepthook = sys.excepthook
_SHARER = os.path.join("multiprocessing", "resource_sharer.py")


def _from_sharer(err: BaseException, tb: Any) -> bool:
    """A connection error raised in the resource sharer's code: the receiving process left."""
    shared = False
    while tb is not None:
        shared = shared or tb.tb_frame.f_code.co_filename.endswith(_SHARER)
        tb = tb.tb_next
    return shared and isinstance(err, (ConnectionError, EOFError))


def _quiet_handover(args: Any) -> None:
    if not _from_sharer(args.exc_value, args.exc_traceback):
        _previous_excepthook(args)


def _quiet_sys_handover(kind: Any, err: BaseException, tb: Any) -> None:
    if not _from_sharer(err, tb):
        _previous_sys_excepthook(kind, err, tb)


STOP_GRACE_S = 10.0  # past DataLoader's 5 s wait for a worker to stop before it sends SIGTERM itself
_term_seen = False


def _on_sigterm(signum: int, frame: Any) -> None:
    global _term_seen
    if _term_seen:
        os._exit(0)
    _term_seen = True
    grace = threading.Timer(STOP_GRACE_S, os._exit, args=(0,))
    grace.daemon = True  # a worker the training process stops in time ends at once, not when this fires
    grace.start()


def worker_options(workers: int, init: Callable[[int], None]) -> dict[str, Any]:
    """DataLoader's keyword arguments for `workers` worker processes (none for 0): `init` as their
    worker_init_fn (stop_with_parent, or a function that calls it: loader.seed_worker), and workers
    forked from this process. A rank of several is started by spawning (harness/run/launch.py), and a spawned
    process makes spawn its default too: each worker would start a new interpreter and import torch and
    the model again (about 3 s of a core each, in the first epoch's time on every rank), where a fork
    starts it in milliseconds, as in a run of one rank or a rank started by torchrun."""
    if workers <= 0:
        return {}
    return {"worker_init_fn": init, "multiprocessing_context": _FORK}


_FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
