"""Ctrl-C and SIGTERM: both stop a run the same way, and neither may cut its closing records off.

SIGTERM is what `timeout`, SLURM and `docker stop` send. `stop_on_sigterm()` makes it raise
`Stopped` (a KeyboardInterrupt that knows its signal), so every path that ends a run on Ctrl-C
(run_stop aborted in mlperf.log, result.json naming the signal) ends it on SIGTERM too.

A terminal's Ctrl-C reaches every process of the group, and the elastic agent then forwards its
own signal to the ranks: a rank already ending its MLPerf log on the first signal would be cut off
by the second, leaving a log without run_stop. Inside `shielded()` such signals are held and, when
nothing else is already unwinding the stack, delivered once the block is done.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

_HELD = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """The run was stopped by a signal; `signal_name` says which ("SIGTERM", "SIGINT")."""

    def __init__(self, signal_name: str, where: str = ""):
        super().__init__(f"{signal_name}{where}")
        self.signal_name = signal_name
        self.where = where  # " to rank 1" when one rank of several got it


def _raise_stopped(signum: int, frame) -> None:
    if isinstance(sys.exc_info()[1], KeyboardInterrupt):
        # A stop already on its way out (a terminal's Ctrl-C, then the launcher's SIGTERM a moment later,
        # landing in a finally or an except on the way): it stands, and the run names its first signal.
        return
    raise Stopped(signal.Signals(signum).name)


def stop_on_sigterm() -> None:
    """SIGTERM raises Stopped in the main thread, as Ctrl-C raises KeyboardInterrupt; either one that
    Python swallows is delivered again (`_deliver_swallowed`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_stopped)
        if sys.unraisablehook is not _deliver_swallowed:
            global _previous_hook
            _previous_hook = sys.unraisablehook
            sys.unraisablehook = _deliver_swallowed


_previous_hook = sys.unraisablehook


def _deliver_swallowed(unraisable) -> None:
    """A signal's exception raised inside a callback Python cannot raise from (a weakref's, such as
    importlib's module-lock callback while a module is imported, or a __del__) is printed as "Exception
    ignored" and dropped: the run would go on as if Ctrl-C had not been pressed (seen in the suite on a
    loaded machine: a Ctrl-C during initialisation, and the run trained to the end). Deliver the same
    signal again from a helper thread, a moment later, so that it lands once the callback has returned."""
    err = unraisable.exc_value
    if isinstance(err, KeyboardInterrupt):
        threading.Thread(target=_redeliver, args=(signal.Signals(signal_number(err)),), daemon=True,
                         name="redeliver-signal").start()
        return
    _previous_hook(unraisable)


def _redeliver(signum: signal.Signals) -> None:
    import _thread
    import time

    time.sleep(0.02)  # the main thread leaves the callback first
    _thread.interrupt_main(signum)


def signal_name(err: BaseException) -> Optional[str]:
    """'SIGINT' for Ctrl-C, the signal's name for Stopped, else None."""
    if isinstance(err, KeyboardInterrupt):
        return getattr(err, "signal_name", None) or "SIGINT"
    return None


def signal_number(err: BaseException) -> int:
    """The signal that stopped the run (SIGINT for a plain KeyboardInterrupt)."""
    name = signal_name(err) or "SIGINT"
    return int(getattr(signal.Signals, name, signal.SIGINT))


@contextmanager
def shielded() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM held (a no-op off the main thread, where Python
    cannot install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.getsignal(sig) for sig in _HELD}
    for sig in _HELD:
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    unwinding = True
    try:
        yield
        unwinding = False
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        # An exception on its way out already ends the run: a held signal would only replace it.
        if pending and not unwinding:
            signal.raise_signal(pending[0])


@contextmanager
def forking_workers() -> Iterator[None]:
    """Around the start of a command's worker processes: SIGINT and SIGTERM are held in this thread,
    so a worker is born with them held and cannot be interrupted before `leave_signals_to_parent` (its
    first call) ignores them; one that arrived meanwhile reaches this process when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)


@contextmanager
def spawning_ranks() -> Iterator[None]:
    """Around a launcher that spawns its ranks deep inside a call of its own (torch's elastic agent):
    SIGINT is held in this thread for the whole block, so each process spawned from it is born with
    Ctrl-C held, through Python's own start-up and its imports, until `take_ctrl_c` (multiprocessing's
    resource tracker is started the same way). Before, a Ctrl-C in those first moments printed each
    rank's traceback before the run's one line. A thread of its own keeps SIGINT open for this
    process meanwhile: the kernel hands the process's signal to a thread that does not hold it, and
    Python runs the handler (the launcher's, which stops the ranks) in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # The first spawn of the process starts multiprocessing's resource tracker, and its start unblocks
    # SIGINT in the calling thread when it is done (Lib/multiprocessing/resource_tracker.py): started
    # here first, later spawns find it running and leave the mask alone.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    done = threading.Event()
    catcher = threading.Thread(target=done.wait, name="harness-sigint", daemon=True)
    catcher.start()  # before the mask: a thread is born with its creator's
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
        done.set()
        catcher.join()


def take_ctrl_c() -> None:
    """A spawned rank's first call once it runs: Ctrl-C raises KeyboardInterrupt from here on, and one
    held since its spawn (`spawning_ranks`) raises it here, with no traceback of Python's start-up. That
    held SIGINT is also how the launcher stops its ranks (the elastic agent's "Closing process via
    signal SIGINT"): dropped, the rank ran its whole run while the launcher waited 30 s to kill it."""
    held = signal.SIGINT in signal.sigpending()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a held signal let through while ignored is discarded
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


def leave_signals_to_parent() -> None:
    """A command's worker process's first call: a terminal's Ctrl-C reaches every process of the group,
    and each worker would print a KeyboardInterrupt traceback of its own; the parent stops its workers
    instead. SIGTERM ends a worker silently. Signals held by `forking_workers` are let through after."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


def ended_by(prog: str, err: KeyboardInterrupt, what: str = "") -> int:
    """The one line a command prints when Ctrl-C or SIGTERM ends it, and its exit status (128 + the
    signal's number: 130 for Ctrl-C, 143 for SIGTERM)."""
    name = signal_name(err)
    word = "interrupted" if name == "SIGINT" else f"stopped by {name}"
    print(f"{prog}: {word}{'; ' + what if what else ''}", file=sys.stderr)
    return 128 + signal_number(err)


USAGE = 2  # the exit status of a command stopped by an error the user can fix


def command_start(usage_errors: tuple[type[BaseException], ...] = ()) -> None:
    """`python -m harness.<command>`, called by the package as Python first imports it: Ctrl-C or SIGTERM
    that no handler of the command catches (while Python imports it, while it checks its command line)
    ends it with one line, as the signal would have ended it, instead of a traceback; so does an error
    of `usage_errors` (whose message is one line that says what to fix), with exit status 2."""
    global _previous_excepthook, _usage_errors
    stop_on_sigterm()
    readable_console()
    _usage_errors = usage_errors
    if sys.excepthook is not _one_line:
        _previous_excepthook, sys.excepthook = sys.excepthook, _one_line


_previous_excepthook = sys.excepthook
_usage_errors: tuple[type[BaseException], ...] = ()


def readable_console() -> None:
    """A character the console's encoding lacks (a path's ü under LANG=C with PYTHONUTF8=0, or
    PYTHONIOENCODING=ascii) is written as its escape: strict, the line that held it was lost, with a
    traceback ("--- Logging error ---", or the command's end on a print). A stream closed before the
    command started is the null device: what goes there is what the user asked to drop."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:  # closed as the command started (`>&-`): a run failed on sys.stdout.isatty()
            null = os.open(os.devnull, os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "w", buffering=1, errors="backslashreplace"))
        stream = getattr(sys, name)
        if hasattr(stream, "reconfigure") and getattr(stream, "errors", "") == "strict":
            stream.reconfigure(errors="backslashreplace")


def reader_gone() -> None:
    """Standard output's reader left (`| head -1`): what is still to be written goes nowhere, and the
    interpreter's last flush finds nothing to fail on."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # no standard output at all (closed before start): nothing is flushed to it either


def _one_line(kind, err, tb) -> None:
    if isinstance(err, BrokenPipeError):  # a command that prints was cut off by its reader: `yes | head` ends so
        reader_gone()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    if not isinstance(err, (KeyboardInterrupt, *_usage_errors)):
        _previous_excepthook(kind, err, tb)
        return
    argv = getattr(sys, "orig_argv", [])
    prog = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else "harness"
    if isinstance(err, KeyboardInterrupt):
        ended_by(prog, err)
    else:
        print(f"{prog}: error: {err}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more can reach it
    if not isinstance(err, KeyboardInterrupt):
        os._exit(USAGE)  # the interpreter is ending on it: nothing else is left to run
    signum = signal_number(err)
    signal.signal(signum, signal.SIG_DFL)  # ends as the signal ends a process: the shell sees 128 + its number
    os.kill(os.getpid(), signum)
