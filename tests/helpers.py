"""Helpers for tests: where things are, and running the harness's commands as a user does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
# the real MLPerf fixtures: ../shared beside the checkout, or wherever HARNESS_SHARED points
SHARED = Path(os.environ.get("HARNESS_SHARED") or REPO.parent / "shared")
FIXTURES = SHARED / "fixtures" / "mlperf_v0.7_results"


def child_env(base: dict | None = None, **extra: str) -> dict:
    """The environment of a harness process a test starts: `base` (this process's environment unless
    given), `extra` on top, and this checkout first on PYTHONPATH. Stand-in models live in tests/
    (HARNESS_MODELS=tests.models.*) and a run from a temporary cwd must still import them; the path this
    process was given stays behind it (where packages are installed with --target, as on the GPU machines)."""
    env = {**(os.environ if base is None else base), "PYTHONUNBUFFERED": "1", **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return env


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """python -m <args>, as a user types it; output captured as text. A harness.train run of one process, and
    harness.report and harness.check, are forked from one that loaded torch already (tests/forked_cli.py), where
    the environment allows."""
    full_env = child_env(**(env or {}))
    if args:
        from tests.forked_cli import run_forked

        done = run_forked(args[0], args[1:], cwd or REPO, full_env, timeout, child_env())
        if done is not None:
            return done
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd or REPO, capture_output=True, text=True,
        timeout=timeout, env=full_env,
    )


def strict_json(path: Path) -> dict:
    """A JSON file (result.json) as a strict JSON parser reads it: NaN or an infinity fails the test."""
    def refuse(constant: str):
        raise AssertionError(f"{path} holds {constant}: not strict JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def said(stderr: str) -> list[str]:
    """The lines of a command's stderr less the busy-machine warnings (harness/observe/host_load.py),
    which a shared or loaded machine adds to any run."""
    return [line for line in stderr.strip().splitlines()
            if not line.startswith(("warning: the machine is busy:", "warning: the machine got busy",
                                    "warning: other processes used"))]


def ctrl_c(*args: str, when: Callable[[subprocess.Popen, list[str]], bool], timeout: float = 60,
           cwd: Path | None = None) -> tuple[int, str, str]:
    """python -m <args> in a session of its own, given Ctrl-C as a terminal gives it (SIGINT to the whole
    process group, workers included) once `when(process, stdout lines so far)` holds; (exit status,
    stdout, stderr). Polls every 10 ms."""
    import signal
    import threading
    import time

    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=cwd or REPO, env=child_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, d=d: d.extend(s), daemon=True)
               for s, d in ((proc.stdout, out), (proc.stderr, err))]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout
    try:
        while not when(proc, out):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"ended before it could be interrupted: {proc.returncode}\n{''.join(err)}")
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for t in readers:
        t.join(timeout=10)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return proc.returncode, "".join(out), "".join(err)


def wait_for_text(root: Path, pattern: str, needle: str, timeout: float = 240) -> Path:
    """The first file under `root` named `pattern` that holds `needle`, polled while a run writes its root. A
    folder that vanishes mid-walk (a dataset's temporary folder, renamed into place once written) or a
    file replaced while read is looked for again at the next poll."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            for p in root.rglob(pattern):
                if needle in p.read_text(errors="replace"):
                    return p
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never appeared in {pattern} under {root}")


def has_children(proc: subprocess.Popen) -> bool:
    """The process has started child processes (a worker pool) that are still there."""
    try:
        return bool(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
    except OSError:
        return False


def fill_disk(monkeypatch, room: int = 4) -> None:
    """From now on the disk takes `room` more bytes of a write, then fails it with ENOSPC, as a full disk
    does (os.write patched: every writer of the harness goes through it, harness.files)."""
    import errno

    real_write = os.write
    left = [room]

    def write(fd: int, data) -> int:
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real_write(fd, bytes(data[:left[0]]))
        left[0] -= n
        return n

    monkeypatch.setattr(os, "write", write)
