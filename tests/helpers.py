"""Helpers for tests: where things are, and running the harness's commands as a user does."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the real MLPerf logs: ../shared beside the checkout, or wherever HARNESS_SHARED points
SHARED = Path(os.environ.get("HARNESS_SHARED") or REPO.parent / "shared")
FIXTURES = SHARED / "fixtures" / "mlperf_v0.7_results"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """python -m <args>, as a user types it; output captured as text."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    # Stand-in models live in tests/ (HARNESS_MODELS=tests.models.*); a run from a temporary cwd must still import them.
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full_env.get("PYTHONPATH", "")) if p)
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
