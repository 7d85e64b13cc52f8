"""A loader's worker processes: forked from the rank, born with Ctrl-C and SIGTERM held and then left to the
training process, stopped as a run ends, and quiet when the training process leaves mid-handover."""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch.utils.data import Dataset

from harness.interface.loader import make_loader, make_shard_loader
from harness.interface.workers import quiet_handover, start_workers, stop_with_parent, stop_workers, waiting_s
from tests.interface.test_loader_and_gather import _ctx


class Signals(Dataset):
    """What a loader worker does with Ctrl-C and SIGTERM: blocked or not, and SIGINT's handler."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        return torch.tensor([signal.SIGINT in blocked, signal.SIGTERM in blocked,
                             signal.getsignal(signal.SIGINT) == signal.SIG_IGN])


def test_a_run_s_end_stops_every_loader_s_workers_and_they_take_its_signals_only_after_their_init():
    """start_workers holds Ctrl-C and SIGTERM while the workers are forked (each is born with both blocked,
    so torch's own SIGTERM handler cannot end one first); stop_with_parent lets them through to its own
    handlers; stop_workers, which the session calls as a run ends, stops every loader's workers."""
    train = make_loader(Signals(), _ctx(0, 1, 5), batch_size=2, workers=2)
    shard = make_shard_loader(Signals(), _ctx(0, 1, 5), batch_size=2, workers=2)
    seen = torch.cat([*train.epoch(1), *shard])
    assert seen.tolist() == [[False, False, True]] * 8  # unblocked, and Ctrl-C ignored, in every worker
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the training process's too
    workers = [*train.loader._iterator._workers, *shard.loader._iterator._workers]
    assert all(w.is_alive() for w in workers)  # persistent workers
    stop_workers()
    assert not any(w.is_alive() for w in workers)
    stop_workers()  # twice does nothing


class Inherited(Dataset):
    """The class attribute `value` as a worker sees it: set at run time in the loader's process, a forked
    worker inherits it; a spawned one imports this module anew and sees 0."""

    value = 0

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int):
        return torch.tensor(Inherited.value)


def _workers_see(out: str) -> None:
    Inherited.value = 42
    loader = make_loader(Inherited(), _ctx(0, 1, 5), batch_size=2, workers=1)
    seen = torch.cat(list(loader.epoch(1))).tolist()
    stop_workers()
    Path(out).write_text(f"{mp.get_start_method()} {seen}")


@pytest.mark.e2e  # a spawned process, as a rank of several is
def test_a_spawned_rank_s_loader_workers_are_forked_from_it(tmp_path):
    """A rank of several is spawned, which makes spawn its default start method: its loader workers would
    import torch and the model anew (12 s of a 2-rank CPU run's first epoch of ResNet's debug preset,
    against 0.2 s forked)."""
    child = mp.get_context("spawn").Process(target=_workers_see, args=(str(tmp_path / "seen"),))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert (tmp_path / "seen").read_text() == "spawn [42, 42]"



def _raise_in_thread(error: BaseException, filename: str) -> None:
    code = compile("def serve(error):\n    raise error\n", filename, "exec")
    space: dict = {}
    exec(code, space)  # a function whose frame names `filename`, as the resource sharer's thread's does
    thread = threading.Thread(target=space["serve"], args=(error,))
    thread.start()
    thread.join()


def test_a_worker_drops_the_resource_sharer_s_connection_errors_only():
    """The training process stopped mid-handover of a batch's file descriptors resets the connection to
    the worker's resource-sharer thread: that error is dropped; the same error elsewhere, or another
    error in that thread, reaches the hook before it (which prints it) as before."""
    sharer = os.path.join(os.path.dirname(multiprocessing.__file__), "resource_sharer.py")
    saved = threading.excepthook
    printed: list[type] = []
    try:
        threading.excepthook = lambda args: printed.append(args.exc_type)  # the hook a worker starts with
        quiet_handover()
        quiet_handover()  # once is enough: a worker's loaders may call it again
        _raise_in_thread(ConnectionResetError(104, "Connection reset by peer"), sharer)
        _raise_in_thread(EOFError(), sharer)
        assert printed == []
        _raise_in_thread(ConnectionResetError(104, "Connection reset by peer"), "elsewhere.py")
        _raise_in_thread(ValueError("a bug"), sharer)
        assert printed == [ConnectionResetError, ValueError]
    finally:
        threading.excepthook = saved


_SHARER_RESET = """
import os, socket, sys, time
from multiprocessing import resource_sharer
from harness.interface.workers import quiet_handover
if sys.argv[1] == "quiet":
    quiet_handover()
r, w = os.pipe()
held = resource_sharer.DupFd(r)  # a batch's descriptor offered: the sharer's server thread starts
client = socket.socket(socket.AF_UNIX)
client.connect(resource_sharer._resource_sharer._address)
client.close()  # the receiving process gone mid-handshake
time.sleep(1.0)  # the server thread meets the closed connection and reports it
print("done")
"""


@pytest.mark.parametrize("mode", ["quiet", "plain"])
def test_the_real_resource_sharer_s_reset_connection_prints_nothing_in_a_worker(mode):
    """The sharer's server thread catches its own errors and hands them to sys.excepthook (seen in CI: a
    2-rank run stopped by SIGTERM printed that traceback after its one line); in a worker it is dropped,
    and without the worker's hooks it is printed, so the test reaches the real path."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SHARER_RESET, mode], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    if mode == "quiet":
        assert done.stderr == ""
    else:
        last = done.stderr.strip().splitlines()[-1]
        assert "resource_sharer.py" in done.stderr, done.stderr
        assert last.split(":")[0] in ("BrokenPipeError", "ConnectionResetError", "EOFError"), done.stderr


class Slow(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int):
        import time

        time.sleep(1.5)
        return torch.tensor(i)


def test_a_wait_for_a_worker_s_batch_is_timed_while_it_lasts():
    """The heartbeat carries the wait (the watchdog judges it in an evaluation, where no step count moves)."""
    import time

    from torch.utils.data import DataLoader

    it = start_workers(DataLoader(Slow(), batch_size=1, num_workers=1, worker_init_fn=stop_with_parent))
    seen: list = []
    probe = threading.Thread(target=lambda: (time.sleep(0.8), seen.append(waiting_s())))
    probe.start()
    next(it)
    probe.join()
    assert seen[0] is not None and seen[0] >= 0.5
    assert waiting_s() is None  # the batch came: no wait now
    stop_workers()


def test_a_stopped_worker_is_killed_as_the_run_ends():
    """A worker stopped (SIGSTOP) or deaf to DataLoader's SIGTERM would be joined forever by multiprocessing's
    exit: the run, stopped by its watchdog or by the user, would never end."""
    import time

    from torch.utils.data import DataLoader

    it = start_workers(DataLoader(Signals(), batch_size=2, num_workers=1, worker_init_fn=stop_with_parent))
    next(it)
    (worker,) = it._it._workers
    os.kill(worker.pid, signal.SIGSTOP)
    started = time.monotonic()
    stop_workers()
    assert not worker.is_alive()
    assert time.monotonic() - started < 30
