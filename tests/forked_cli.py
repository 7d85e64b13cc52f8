"""`python -m harness.train ...` (and harness.report, harness.check) for tests, forked from one process per pytest
worker that has loaded torch.

On 2 cores a `python -m harness.train` at a debug preset spends about 6 of its ~10 s loading torch and
torch._dynamo (torch.optim's first optimizer imports it) before its first step. harness.bench already starts
its CPU cells as forks of one process that loaded them (harness/bench/start.py: the child becomes what the
command is at its first line, chooses its threads from its own environment, and ends as an interpreter
ends); run_cli starts harness.train runs through the same forker, so each test pays the import once.

harness.report and harness.check spend 2 s and 0.5 s of their ~2.3 and ~0.7 s loading scipy, pandas (through the
official result summarizer) and the compliance checker: the forker loads those once, at the first such command.
What stays a process of its own, as before: any other command; a run whose environment differs from the
forker's in what is read while torch, OpenMP or Python start (thread counts, allocator settings, paths);
several ranks, nodes or another Hydra launcher (their ranks start processes of their own anyway); a host
with a GPU (the GPU check runs the tests as users run the commands); and HARNESS_TEST_FORK=0. Tests of
how a process starts (tests/run/test_threads.py, tests/test_signals.py) start theirs with subprocess.

    HARNESS_TEST_FORK=0 python -m pytest tests/test_conformance.py    # every run its own process
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from harness.bench.start import Starter

# environment variables read while Python, torch, OpenMP or the allocators start: a run that changes one
# is started as a process of its own, which reads them
_READ_AT_START = ("PYTHON", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "TORCH", "PYTORCH", "CUDA", "NVIDIA",
                  "LD_", "MALLOC", "NCCL", "GLOO", "HYDRA_")

_starter: Optional[Starter] = None
_starter_env: dict[str, str] = {}
# what a command imports as it runs, beyond what the forker loaded: loaded into the forker at its first use
_LOADS = {"harness.train": [],
          "harness.report": ["harness.report", "harness.results.analysis.collect", "scipy.stats",
                             "mlperf_logging.result_summarizer.result_summarizer"],
          "harness.check": ["harness.check.__main__", "mlperf_logging.compliance_checker.mlp_compliance"],
          "harness.check_data": ["harness.check_data"]}
_loaded: set[str] = set()


def _forks_here() -> bool:
    if os.environ.get("HARNESS_TEST_FORK", "1") == "0" or not hasattr(os, "fork"):
        return False
    import torch

    return not torch.cuda.is_available()


def _one_process(argv: tuple[str, ...]) -> bool:
    """A run whose launcher trains in its own process (one rank, one node, Hydra's basic launcher)."""
    for arg in argv:
        key, _, value = arg.partition("=")
        if key.lstrip("+") in ("gpus", "nodes") and value.strip() not in ("1", ""):
            return False
        if key.lstrip("+").startswith("hydra/launcher") or key.startswith("hydra.launcher"):
            return False
    return True


def _same_start(env: dict[str, str], base: dict[str, str]) -> bool:
    changed = {k for k in env.keys() | base.keys() if env.get(k) != base.get(k)}
    return not any(k.startswith(_READ_AT_START) for k in changed)


def run_forked(command: str, argv: tuple[str, ...], cwd: Path, env: dict[str, str], timeout: float,
               start_env: dict[str, str]) -> Optional[subprocess.CompletedProcess]:
    """`python -m <command> *argv` as a fork, with subprocess.run's result and timeout; None where this command
    must be a process of its own. `start_env`: the environment the forker starts with (the first call's)."""
    global _starter, _starter_env
    if command not in _LOADS or (command == "harness.train" and not _one_process(argv)) or not _forks_here():
        return None
    if _starter is None:
        _starter, _starter_env = Starter(start_env), dict(start_env)
        atexit.register(_starter.close)
    if not _same_start(env, _starter_env):
        return None
    if command not in _loaded:
        _starter.load(_LOADS[command])
        _loaded.add(command)
    scratch = Path(tempfile.mkdtemp(prefix="forked-cli-"))
    try:
        out, err = scratch / "stdout", scratch / "stderr"
        child = _starter.start(list(argv), out, err=err, cwd=cwd, env=env, command=command)
        if child is None:
            return None
        args = [sys.executable, "-m", command, *argv]
        try:
            rc = child.wait(timeout)
        except BaseException as stopped:  # this timeout, or pytest-timeout's failure or a Ctrl-C raised in the wait
            try:
                os.killpg(child.pid, signal.SIGKILL)  # its own session: the run and whatever it started
            except ProcessLookupError:
                pass
            child.wait()
            if not isinstance(stopped, subprocess.TimeoutExpired):
                raise  # not left running beside the tests that follow
            raise subprocess.TimeoutExpired(args, timeout, out.read_text(errors="replace"),
                                            err.read_text(errors="replace")) from None
        return subprocess.CompletedProcess(args, rc, out.read_text(errors="replace"), err.read_text(errors="replace"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
