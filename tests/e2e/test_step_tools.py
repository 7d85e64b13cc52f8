"""The step profiler and the step bounds of scripts/tools/ (docs/tools.md), run as a user runs them:
the profiler's table of a tiny model's step on the CPU, the bounds counted on the meta device."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def _run(script: str, *args: str, cwd) -> str:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "tools" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_step_bounds_follow_the_batches_and_peaks_given(tmp_path):
    out = _run("step_bounds.py", "--gnmt-batch", "64", "--ncf-batch", "1024", "--tflops", "67", "--tbps", "4.8",
               cwd=tmp_path)
    assert out.count("# ") == 2 and "# 16-bit activations" in out and "# 32-bit activations" in out
    assert out.count("gnmt batch 64: 160.67M params") == 2 and out.count("ncf batch 1,024:") == 2
    # one peak asked for: one ceiling line per model and width, each naming its bound
    ceilings = re.findall(r"at 67 TFLOPS: [\d.]+ ms of compute, (compute|memory)-bound, ceiling [\d,]+ (\w+)/s", out)
    assert len(ceilings) == 4 and {unit for _, unit in ceilings} == {"tokens", "samples"}


def test_the_step_profiler_prints_the_step_time_and_the_operators_that_take_it(tmp_path):
    out = _run("profile_step.py", "model=ncf", "+debug=ncf", "device=cpu", "--warmup", "1", "--steps", "2", "--rows",
               "15", cwd=tmp_path)  # the optimizer's step among the 15 costliest on any machine (5 missed it once)
    head = re.search(r"\[rank 0/1\] ncf, [\d,]+ parameters, fp32, batch (\d+) per rank, cpu: [\d.]+ ms/step under the "
                     r"profiler, [\d,]+ samples/s on this rank", out)
    assert head is not None, out[-2000:]
    assert "Self CPU" in out and "Optimizer.step" in out
