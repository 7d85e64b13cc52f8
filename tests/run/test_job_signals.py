"""A signal at the edges of a run (as its folder is made, as it starts, just after run_stop): the run's
result.json is there and says what happened, and the command's one line says the same."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO, child_env

# harness.train in a child process, with one function of the run's replaced by `PATCH` (which sends the signal
# where the real one would run)
_RUN = """
import signal, sys
from harness import train
from harness.run import job, record_file
{patch}
rc = train.main(['model=ncf', '+debug=ncf', 'device=cpu', 'seed=1', 'progress=false',
                 'data_root={data}', 'output_root={out}'])
sys.exit(rc)
"""

_AFTER_RUN_STOP = """
real = job._host_load_during
def late(*a, **k):  # the run logged run_stop; its result.json is not written yet
    signal.raise_signal(signal.SIGTERM)
    return real(*a, **k)
job._host_load_during = late
"""

_AT_START = """
def early():  # the run's folder is made; its record not yet (the versions' imports)
    signal.raise_signal(signal.SIGINT)
record_file.versions = early
"""

_BEFORE_THE_RUN = """
def never(cfg):  # Hydra making the run's folder: the run itself has not begun
    raise KeyboardInterrupt
job.run_job = never
"""


def _run(tmp_path, patch: str) -> tuple[subprocess.CompletedProcess, list]:
    out = tmp_path / "out"
    code = _RUN.format(patch=patch, data=tmp_path / "data", out=out)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=child_env(OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=300)
    return proc, [json.loads(p.read_text()) for p in out.rglob("result.json")]


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.timeout(300)
def test_a_signal_just_after_run_stop_keeps_the_finished_run_s_result(tmp_path):
    proc, results = _run(tmp_path, _AFTER_RUN_STOP)
    assert proc.returncode == 143, proc.stderr
    (result,) = results
    # the run finished (the debug preset stops at its epoch limit short of the target): its own end stands
    assert result["status"] == "aborted" and "not reached" in result["reason"], result
    assert _last_line(proc) == ("harness.train: stopped by SIGTERM as the run ended; its result.json keeps its end "
                                f"(aborted: {result['reason']})")


@pytest.mark.timeout(300)
def test_a_signal_as_the_run_starts_marks_it_aborted(tmp_path):
    proc, results = _run(tmp_path, _AT_START)
    assert proc.returncode == 130, proc.stderr
    (result,) = results
    assert result["status"] == "aborted" and result["reason"].startswith("interrupted (SIGINT)"), result
    assert _last_line(proc) == "harness.train: interrupted; the run is marked aborted in its result.json"


@pytest.mark.timeout(300)
def test_a_signal_before_the_run_began_says_no_run_was_marked(tmp_path):
    proc, results = _run(tmp_path, _BEFORE_THE_RUN)
    assert proc.returncode == 130, proc.stderr
    assert results == []
    assert _last_line(proc) == "harness.train: interrupted before a run began: no run was marked"
