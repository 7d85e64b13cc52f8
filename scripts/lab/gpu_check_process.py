"""How the GPU check (scripts/lab/gpu_check.py) runs its commands and writes its rows: each command in a
process group of its own under a limit, stopped whole at it (SIGINT, then SIGKILL), its console kept in the
check's logs; each row printed as it is written; and the machine the check ran on.

    python3 scripts/lab/gpu_check.py /tmp/check --cpu-smoke --only throughput embedded   # here: every command runs, tiny
"""
from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

from gpu_check_rows import SPREAD

REPO = Path(__file__).resolve().parents[2]


class Check:
    def __init__(self, out: Path, work: Path, budget_s: float, smoke: bool):
        self.out, self.work, self.logs, self.smoke = out, work, work / "logs", smoke
        self.logs.mkdir(parents=True, exist_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        self.t0, self.budget_s = time.monotonic(), budget_s
        self.rows: list[dict[str, Any]] = []

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def row(self, key: str, group: str, label: str, status: str, value: Any = None, unit: str = "",
            compare: str = "none", note: str = "") -> None:
        self.rows.append({"key": key, "group": group, "label": label, "status": status, "value": value, "unit": unit,
                          "compare": compare, "note": note, **({"tolerance": SPREAD[key]} if key in SPREAD else {})})
        print(f"[{self.elapsed():5.0f} s] {group} {label}: {status} {'' if value is None else value} {unit} {note}",
              flush=True)

    def run(self, name: str, argv: list[str], limit: float, env: Optional[dict[str, str]] = None) -> tuple[int, str]:
        """(exit status, console) of one command under `limit` seconds (124: killed at the limit)."""
        log = self.logs / f"{name}.txt"
        with log.open("w") as f:
            # its own process group: at the limit every process it started stops with it (pytest-xdist's workers
            # and a run's ranks outlived a killed parent and held the GPU through the next phase's rows)
            proc = subprocess.Popen(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, **(env or {})})
            try:
                rc = proc.wait(timeout=max(limit, 1))
            except subprocess.TimeoutExpired:
                rc = 124
                stop_group(proc)
        return rc, log.read_text(errors="replace")


def stop_group(proc: subprocess.Popen) -> None:
    """SIGINT to the command's process group first (pytest then writes its report and the tests that ran,
    a run its record), SIGKILL 20 s later to whatever of the group is left."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        os.killpg(proc.pid, signal.SIGKILL)  # the leader may have ended before its children
    except ProcessLookupError:  # nothing of the group is left
        pass
    proc.wait()


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else "no output")[:160].replace("|", "/")


def run_dir_of(console: str) -> Optional[Path]:
    for line in console.splitlines():
        if line.startswith("run dir: "):
            return REPO / line[len("run dir: "):].strip()
    return None


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count()}
    try:
        import torch
        info.update(torch=torch.__version__, cuda=torch.version.cuda)
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["gpu_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    except ImportError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True)
        info["driver"] = out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    info.setdefault("gpu", "CPU")
    return info
