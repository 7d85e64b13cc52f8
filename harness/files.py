"""A disk that fills mid-run ends the run at once, with one line, and every file it wrote stays whole.

    python -m harness.train model=ncf seed=1 output_root=/mnt/small    # "error: the disk ... is full ..."

- `RecordFile`: a file of one-line records (mlperf.log, telemetry.jsonl) written a whole line at a
  time; a write the disk cannot hold is taken back (the file is cut to its last whole line) and
  raises DiskFull.
- Writers that cannot raise into the run (a logging handler, the heartbeat and telemetry threads,
  TensorBoard's writer) call `trip()`; the loop's check (harness/observe/disk.py) raises DiskFull at the next step
  or evaluation. The state is per process, as the disk is: one flag, set by the first failed write.
- `write_atomic`: every whole file the harness writes (result.json, config.yaml, system.json, the
  report's and the sweep's files, plots, the bench tables) is replaced in one step, a temporary file
  beside it renamed over it: a reader sees the old file or the new, never half of one, and a write
  that fails leaves the old file as it was and no temporary file behind. A link is written through
  to the file it names (the link stays); a path that is there but is not a regular file (a device such
  as /dev/null, a pipe, a folder) is refused, since the rename would replace the node itself.
- `Reserve`: room kept free for the run's own end. The command that owns the run directory holds
  a small file of reserved blocks from the start; the first failed write frees it, so that the
  closing run_stop and result.json still fit.

A write fails for want of room with ENOSPC (the disk), EDQUOT (a quota) or EFBIG (a file-size limit,
RLIMIT_FSIZE); other errors stay what they are.
"""
from __future__ import annotations

import errno
import logging
import os
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Optional

FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
RESERVE_BYTES = 1 << 20  # result.json of a long run with telemetry is tens of kB; mlperf.log's run_stop, a line


RUN_HINT = "free space or choose another output_root"


class DiskFull(OSError):
    """A write failed for want of room; the message names the file and what to do, in one line."""

    def __init__(self, path: Path | str, cause: OSError, hint: str = RUN_HINT):
        why = {errno.EFBIG: "a file-size limit (ulimit -f) stops it"}.get(cause.errno or 0, "the disk is full")
        self.message = f"cannot write {path}: {why} ({os.strerror(cause.errno or 0)}); {hint}"
        super().__init__(cause.errno, self.message)
        self.path = str(path)

    def __str__(self) -> str:
        return self.message


class WriteFailed(OSError):
    """A write failed for another reason than room (a folder not writable, a folder where the file
    should be); the message names the file, in one line."""

    def __init__(self, path: Path | str, cause: OSError):
        self.message = f"cannot write {path}: {cause.strerror or cause}"
        super().__init__(cause.errno, self.message)
        self.path = str(path)

    def __str__(self) -> str:
        return self.message


def is_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in FULL


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first: Optional[DiskFull] = None
        self.reserves: list[Reserve] = []


_state = _State()


def trip(path: Path | str, cause: OSError) -> DiskFull:
    """Note a write that failed for want of room (the first one is kept) and free the reserve."""
    with _state.lock:
        if _state.first is None:
            _state.first = cause if isinstance(cause, DiskFull) else DiskFull(path, cause)
        reserves, _state.reserves = _state.reserves, []
    for r in reserves:
        r.release()
    return _state.first


def raise_if_full() -> None:
    """Raise the first DiskFull this process saw, if any (the loop's disk check, the run's end)."""
    if _state.first is not None:
        raise _state.first


def reset() -> None:
    """Forget a past failure (a new run in the same process: a Hydra sweep)."""
    with _state.lock:
        _state.first = None


def write_atomic(path: Path | str, data: str | bytes, *, hint: str = RUN_HINT, mode: int = 0o644) -> None:
    """Replace `path` with `data` in one step: written to a temporary file in the same folder, then
    renamed over it (a rename within one file system is atomic). A write the disk cannot hold raises
    DiskFull (one line naming `path`, then `hint`), any other failure of the file system WriteFailed
    (one line naming `path`); either leaves the old file intact and no temporary file behind."""
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    tmp: Optional[str] = None
    try:
        path = destination(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with _no_sigxfsz():
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view):]
            os.fchmod(fd, mode & ~_umask())  # mkstemp's 0600, widened as open() would make the file: no wider
        finally:
            os.close(fd)  # where a file system reports a full disk only now (NFS), it raises here
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if not isinstance(err, OSError) or isinstance(err, (DiskFull, WriteFailed)):
            raise
        raise (DiskFull(path, err, hint) if is_full(err) else WriteFailed(path, err)) from None


def _umask() -> int:
    """This process's umask, read without setting it where Linux shows it (os.umask sets it, for all threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


NOT_A_FILE = "it is not a regular file (a device, a pipe or a folder); give a file name"


def not_a_file(path: Path | str) -> Optional[str]:
    """Why `path` cannot be a file to replace, or None: it is a regular file, a link to one, or not
    there yet (nor its folder)."""
    try:
        st = os.stat(path)  # through links: a link names the file it leads to
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"{err.strerror or err}"  # a link that loops, a folder that cannot be searched
    return None if stat.S_ISREG(st.st_mode) else NOT_A_FILE


def destination(path: Path | str) -> Path:
    """The file a write to `path` replaces: the file a link leads to (the link stays a link), or
    WriteFailed for a path that is not a regular file (the rename would replace the node itself)."""
    path = Path(path)
    why = not_a_file(path)
    if why is not None:
        raise WriteFailed(path, OSError(errno.EINVAL, why))
    return Path(os.path.realpath(path)) if path.is_symlink() else path


class RecordFile:
    """A new file of lines, each written whole or not at all (a partial write is cut off again)."""

    def __init__(self, path: Path, *, exclusive: bool = True):
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_EXCL if exclusive else 0)
        try:
            self._fd: Optional[int] = os.open(path, flags, 0o644)
        except OSError as err:
            if is_full(err):
                raise trip(path, err) from None
            raise
        self._lock = threading.Lock()

    def write_line(self, line: str) -> None:
        data = (line.rstrip("\n") + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path} is closed")
            start = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                with _no_sigxfsz():
                    view = memoryview(data)
                    while view:
                        view = view[os.write(self._fd, view):]
            except OSError as err:
                os.ftruncate(self._fd, start)  # the file ends at its last whole line
                if is_full(err):
                    raise trip(self.path, err) from None
                raise

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class _no_sigxfsz:
    """Beyond RLIMIT_FSIZE the kernel sends SIGXFSZ, which kills the process unless ignored; ignored,
    the write fails with EFBIG instead, which a RecordFile handles (main thread only)."""

    def __enter__(self) -> None:
        self.saved = None
        if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
            self.saved = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            signal.signal(signal.SIGXFSZ, self.saved)


class Reserve:
    """`size` bytes of blocks held in a hidden file until the first failed write frees them."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES):
        self.path = path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.posix_fallocate(fd, 0, size)  # real blocks, not a sparse file's promise
            finally:
                os.close(fd)
        except (OSError, AttributeError):
            self.release()  # no room even for this, or no fallocate here: run without a reserve
            return
        with _state.lock:
            _state.reserves.append(self)

    def release(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        with _state.lock:
            if self in _state.reserves:
                _state.reserves.remove(self)


def watch_logging() -> None:
    """The log files of this process (train.log, rank_<r>.log) trip the flag on a failed write
    instead of printing `--- Logging error ---` and a traceback for every line that follows; the
    console's lines stop quietly once its reader left (`| head -1`), the run going on to its end."""
    for handler in logging.getLogger().handlers:
        if getattr(handler, "_harness_watched", False):
            continue
        if isinstance(handler, logging.FileHandler):
            handler.handleError = _handle_error(handler)  # type: ignore[method-assign]
        elif isinstance(handler, logging.StreamHandler):
            handler.handleError = _console_error(handler)  # type: ignore[method-assign]
        handler._harness_watched = True  # type: ignore[attr-defined]


def _console_error(handler: logging.StreamHandler):
    original = handler.handleError

    def handle_error(record: logging.LogRecord) -> None:
        if not isinstance(sys.exc_info()[1], BrokenPipeError):
            original(record)
            return
        try:  # the descriptor itself: the interpreter's last flush of sys.stdout would fail on it too
            os.dup2(os.open(os.devnull, os.O_WRONLY), handler.stream.fileno())
        except (OSError, ValueError, AttributeError):
            handler.setLevel(logging.CRITICAL + 1)  # a stream without a descriptor: this handler says no more

    return handle_error


def _handle_error(handler: logging.FileHandler):
    original = handler.handleError

    def handle_error(record: logging.LogRecord) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, OSError) and is_full(err):
            trip(handler.baseFilename, err)
            return
        original(record)

    return handle_error
