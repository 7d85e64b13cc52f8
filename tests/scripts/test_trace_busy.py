"""scripts/tools/trace_busy.py: how much of a profiled step the GPU was busy, from torch.profiler's Chrome trace
(profile_step.py prints its line on a GPU). The events below are in Kineto's form: categories "kernel",
"gpu_memcpy" and "cuda_runtime", microseconds."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("trace_busy", REPO / "scripts" / "tools" / "trace_busy.py")
trace_busy = importlib.util.module_from_spec(_spec)
sys.modules["trace_busy"] = trace_busy  # its dataclass looks its module up there
_spec.loader.exec_module(trace_busy)

# two steps of 50 us: overlapping kernels on two streams (0-15), a copy to the host the host waits for, a gap
# while the host launches the next step, then one kernel
EVENTS = [
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 10},
    {"ph": "X", "cat": "kernel", "name": "reduce", "ts": 5, "dur": 10},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 30, "dur": 5},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 31, "dur": 5},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 40, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 40, "dur": 50},
    {"ph": "i", "cat": "kernel", "name": "marker", "ts": 60},
    {"ph": "X", "cat": "kernel", "name": "relu", "ts": 90, "dur": 10},
]


def test_overlapping_kernels_count_once_and_the_gaps_are_the_hosts():
    b = trace_busy.busy(EVENTS)
    assert (b.span_us, b.busy_us, b.kernels, b.host_waits, b.to_host) == (100, 30, 3, 1, 1)
    line = b.line(steps=2)
    assert line.startswith("GPU busy 0.01 ms of each 0.05 ms profiled step (30%): the GPU waited on the host")
    assert "1.5 kernels" not in line and "2 kernels, 0.5 host waits on the GPU and 0.5 copies to the host" in line


def test_a_step_the_gpu_fills_is_called_so():
    full = [{"ph": "X", "cat": "kernel", "name": "k", "ts": t, "dur": 9.5} for t in range(0, 100, 10)]
    assert "(95%): the GPU was busy nearly the whole step" in trace_busy.busy(full).line(steps=1)


def test_the_command_reads_a_trace_and_refuses_what_is_not_one(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": EVENTS}))
    script = str(REPO / "scripts" / "tools" / "trace_busy.py")
    done = subprocess.run([sys.executable, script, str(trace), "--steps", "2"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("GPU busy 0.01 ms of each 0.05 ms profiled step (30%)")
    (tmp_path / "cpu.json").write_text(json.dumps({"traceEvents": [EVENTS[5]]}))
    (tmp_path / "bad.json").write_text("{not json")
    for name, says in (("cpu.json", "no GPU kernels in the trace"), ("bad.json", "not a readable Chrome trace")):
        done = subprocess.run([sys.executable, script, str(tmp_path / name)], capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == "" and says in done.stderr and name in done.stderr
    done = subprocess.run([sys.executable, script, str(trace), "--steps", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "argument --steps: 0 is not a positive whole number" in done.stderr
