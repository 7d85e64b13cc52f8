"""How harness.bench starts a cell's process: its environment, and, for a CPU cell of one rank, a fork of
one process that has already loaded torch and the harness.

A `python -m harness.train` spends most of a CPU cell's seconds before its first step and after its last
one: Python, torch (with torch._dynamo, which torch.optim imports for the first optimizer), Hydra and the
harness load in about 3 s of CPU, and the interpreter takes about 0.5 s more to free every module's objects
at its end, against about a second of work for a model at its debug preset: `--smoke`'s 16 cells took 81 s
of CPU and 64 s of wall time on 2 cores that way, and 21 s and 20 s as forks (2026-12-02). So for the CPU
cells of one rank the bench starts this module once (`python -m harness.bench.start`, in the cells'
environment, on the first cell): it chooses the thread policy as harness.train's main() does, loads what
every run loads, and forks one child per cell. The child becomes what `python -m harness.train <overrides>`
is at its first line (the printed command's argv, a process and a session of its own, its output in the
cell's bench.log, the same environment), runs harness.train's main() and ends as an interpreter ends
(threads joined, atexit handlers run, output flushed), less the freeing of the objects, which nothing
observes. A CUDA cell and a cell of several ranks (which spawn ranks of their own) run as their own
`python -m harness.train`, as does every cell once this process cannot start or has ended; a cell it
forked before it ended is waited on to its end (a pidfd), its result.json saying how it went.

The exchange, one JSON object a line: the bench writes {"id": n, "argv": [...], "log": path} on the
process's stdin; it answers {"id": n, "pid": p} once it forked, and {"pid": p, "rc": status} when the
child ended (rc as subprocess.Popen's returncode). At the end of its stdin it ends; cells it started run on.
A request may also name the child's "err" (stderr apart from "log"), "cwd", "env" (the whole
environment it starts with, the thread policy chosen from it) and "command" (another of COMMANDS than
harness.train); a request {"load": [module, ...]} has the process import those modules, so that the
children it forks next find them loaded (no answer). tests/helpers.run_cli starts its `python -m
harness.train`, harness.report and harness.check commands through it so, where the environment would
load torch the same way.
"""
from __future__ import annotations

import atexit
import importlib
import itertools
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, NoReturn, Optional, Sequence, Union


# the commands a child may become (`python -m <command>`): the runs a bench starts, and what tests run beside them
COMMANDS = ("harness.train", "harness.report", "harness.check", "harness.check_data")


def cell_env(device: str, gpus: Sequence[int] = ()) -> dict[str, str]:
    """A cell's environment: one OpenMP thread on a CPU (cells run side by side), its own GPUs on CUDA."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")
    elif gpus:  # the GPUs this cell holds; a cell running beside it holds others
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    return env


class Forked:
    """A forked cell, waited on as a subprocess.Popen: pid (also its session's), wait(), returncode."""

    def __init__(self, argv: list[str]):
        self.args = argv
        self.pid = 0
        self.pidfd: Optional[int] = None  # its end can be seen without its exit status, should the forker end
        self.returncode: Optional[int] = None
        self.forked = threading.Event()
        self.ended = threading.Event()

    def wait(self, timeout: Optional[float] = None) -> int:
        if not self.ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode if self.returncode is not None else 1  # its status died with the forker

    def end(self, returncode: Optional[int]) -> None:
        self.returncode = returncode
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        self.ended.set()

    def outlive_forker(self) -> None:
        """The forker ended first: the cell ends when its process does (its result.json tells how)."""
        if self.pidfd is not None:
            select.select([self.pidfd], [], [])
        self.end(None)


class Starter:
    """The forking process, started by the first cell that asks (a --resume with nothing left to run
    starts none) and shared by the bench's threads; start() is None where it cannot fork."""

    def __init__(self, env: dict[str, str]):
        self._env = env
        self._proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._asked: dict[int, Forked] = {}
        self._running: dict[int, Forked] = {}
        self._open = True

    def start(self, argv: list[str], log: Path, *, err: Optional[Path] = None, cwd: Optional[Path] = None,
              env: Optional[dict[str, str]] = None, command: str = "harness.train") -> Optional[Forked]:
        """The child running `python -m <command> *argv`, stdout in `log` (stderr too unless `err`), in
        `cwd` and `env` (this process's start environment unless given); None where it cannot fork."""
        if command not in COMMANDS:
            raise ValueError(f"{command} is not one of {COMMANDS}")
        cell = Forked(argv)
        asked = {"argv": argv, "log": str(log), "err": str(err) if err else None, "cwd": str(cwd) if cwd else None,
                 "env": env, "command": command}
        with self._lock:
            self._ensure_running()
            if not self._open or self._proc is None or self._proc.stdin is None:
                return None
            n = next(self._ids)
            self._asked[n] = cell
            try:
                self._proc.stdin.write(json.dumps({"id": n, **asked}) + "\n")
                self._proc.stdin.flush()
            except OSError:  # it has ended
                del self._asked[n]
                return None
        cell.forked.wait()
        return cell if cell.pid else None

    def load(self, modules: list[str]) -> None:
        """Have the process import `modules` before it forks the next children (a command's heavy imports)."""
        with self._lock:
            self._ensure_running()
            if self._open and self._proc is not None and self._proc.stdin is not None:
                try:
                    self._proc.stdin.write(json.dumps({"load": modules}) + "\n")
                    self._proc.stdin.flush()
                except OSError:  # it has ended: the children start as processes of their own
                    pass

    def _ensure_running(self) -> None:
        """Start the forking process on first use (under the lock)."""
        if self._open and self._proc is None:
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "harness.bench.start"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, env=self._env, text=True,
                    start_new_session=True)  # a Ctrl-C is the bench's to handle
            except OSError:
                self._open = False
            else:
                threading.Thread(target=self._read, args=(self._proc,), name="bench-start", daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                said = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                if "rc" in said and said["pid"] in self._running:
                    self._running.pop(said["pid"]).end(said["rc"])
                elif "id" in said and said["id"] in self._asked:
                    cell = self._asked.pop(said["id"])
                    cell.pid = said["pid"]
                    try:
                        cell.pidfd = os.pidfd_open(cell.pid)
                    except (AttributeError, OSError):  # ended already (its status is on the way), or no pidfds
                        pass
                    self._running[cell.pid] = cell
                    cell.forked.set()
        proc.stdout.close()
        with self._lock:  # it ended: cells not yet forked start as processes of their own
            self._open = False
            for cell in self._asked.values():
                cell.forked.set()
            for cell in self._running.values():
                threading.Thread(target=cell.outlive_forker, daemon=True).start()
            self._asked.clear()
            self._running.clear()

    def close(self) -> None:
        with self._lock:
            self._open, proc = False, self._proc
            if proc is None:
                return
            if proc.stdin is not None:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CellProcess = Union[subprocess.Popen, Forked]


def start(argv: list[str], log_path: Path, env: dict[str, str], starter: Optional[Starter]) -> CellProcess:
    """A cell's process, in a session of its own (a timeout or Ctrl-C ends its ranks too, not only its
    launcher): forked by `starter` where there is one, else `python -m harness.train *argv`."""
    forked = starter.start(argv, log_path) if starter is not None else None
    if forked is not None:
        return forked
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "harness.train", *argv], stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)


def _say(out: IO[str], message: dict) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()  # before any fork: a child must not inherit an unwritten answer


def _reap(out: IO[str]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _say(out, {"pid": pid, "rc": os.waitstatus_to_exitcode(status)})


def _cell(command: str, argv: list[str], log: str, answers: int, environ: dict[str, str], err: Optional[str] = None,
          cwd: Optional[str] = None) -> NoReturn:
    """In the child: `python -m <command> *argv` with its output in `log` (stderr in `err` if given), in
    `cwd`, then the end of an interpreter."""
    import tempfile

    from harness.run import threads

    os.setsid()
    threads.apply_in_fork(environ)  # each cell's threads chosen at its own start, as its own process chooses them
    tempfile.tempdir = None  # found again from this environment's TMPDIR
    if cwd:
        os.chdir(cwd)
        sys.path[0] = os.getcwd()  # where `python -m` looks first
    os.close(answers)
    write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, log, write), (2, err, write)):
        if path is None:
            os.dup2(1, 2)
            continue
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    runnable = importlib.import_module(command)
    if hasattr(runnable, "__path__"):  # a package (harness.check): `python -m` runs its __main__
        runnable = importlib.import_module(f"{command}.__main__")
    sys.argv = [str(runnable.__file__), *argv]
    sys.orig_argv = [sys.executable, "-m", command, *argv]  # the command's name in its one-line errors
    code = 1
    try:
        code = runnable.main(argv)
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else int(end.code is not None)
    except BaseException:  # noqa: BLE001  (as an uncaught exception ends the command: its hook, status 1)
        sys.excepthook(*sys.exc_info())
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # logging's flush and close among them
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def main() -> int:
    import gc

    from harness.run import threads

    # the thread policy before torch starts OpenMP, as harness.train's main() chooses it (each child chooses
    # again from the environment it started with)
    environ = dict(os.environ)
    threads.apply_at_start()
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  (torch.optim's first optimizer imports it)

    import harness.run.job  # noqa: F401  (Hydra, the harness's run and its launcher)
    import harness.train  # noqa: F401

    gc.freeze()  # what is loaded stays out of the children's collections (and its pages shared)
    answers = os.dup(1)
    out = os.fdopen(answers, "w")
    os.dup2(2, 1)  # a stray print goes to stderr, not into the answers
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.05)
        _reap(out)
        if not ready:
            continue
        data = os.read(0, 1 << 16)
        if not data:
            return 0
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            asked = json.loads(line)
            if "load" in asked:  # imported here once, so that every child forked after finds them loaded
                for name in asked["load"]:
                    importlib.import_module(name)
                gc.freeze()
                continue
            pid = os.fork()
            if pid == 0:
                _cell(asked.get("command") or "harness.train", asked["argv"], asked["log"], answers, asked.get("env") or environ, asked.get("err"),
                      asked.get("cwd"))
            _say(out, {"id": asked["id"], "pid": pid})


if __name__ == "__main__":
    sys.exit(main())
