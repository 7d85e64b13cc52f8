"""Helpers for tests: where things are, and running the harness's commands as a user does."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures" / "mlperf_v0.7_results"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """python -m <args>, as a user types it; output captured as text."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd or REPO, capture_output=True, text=True,
        timeout=timeout, env=full_env,
    )


def said(stderr: str) -> list[str]:
    """The lines of a command's stderr less the busy-machine warnings (harness/observe/host_load.py),
    which a shared or loaded machine adds to any run."""
    return [line for line in stderr.strip().splitlines()
            if not line.startswith(("warning: the machine is busy:", "warning: the machine got busy",
                                    "warning: other processes used"))]
