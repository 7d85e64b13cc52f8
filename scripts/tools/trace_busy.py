"""How much of a profiled window the GPU was busy, and how often the host waited on it, from a Chrome trace
that torch.profiler wrote (`prof.export_chrome_trace`, or scripts/tools/profile_step.py --trace-dir).

A step whose time is well over its GPU's busy time is held by the host: launching kernels one by one, or
draining the queue at each synchronization (a `.item()`, a `nonzero`, a copy to the host) and then making
the GPU wait while it launches the next ones. The verdict says which of the two a trace shows.

    python scripts/tools/trace_busy.py traces/maskrcnn_rank0.json --steps 10

Timestamps and durations are the trace's microseconds; busy time is the union of the GPU's kernel, copy
and memset intervals (streams that overlap count once).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402

# the trace's categories of work on the GPU (Kineto's names)
GPU_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
# runtime calls that block the host until the GPU (a stream, the device, an event) has finished
HOST_WAITS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}


@dataclass
class Busy:
    span_us: float  # first GPU work's start to the last's end
    busy_us: float  # the union of the GPU's work intervals
    kernels: int
    host_waits: int  # blocking runtime calls (HOST_WAITS)
    to_host: int  # copies from the device to the host (each makes the host wait, unless into pinned memory)

    def line(self, steps: int) -> str:
        """One line, per step of the `steps` the trace holds. The profiler slows the host, so a step the host
        holds shows a lower busy share here than it has unprofiled: the share is a floor."""
        per = max(steps, 1)
        step, busy = self.span_us / per / 1e3, self.busy_us / per / 1e3
        share = busy / step if step > 0 else 0.0
        verdict = ("the GPU was busy nearly the whole step" if share >= 0.9 else
                   "the GPU waited on the host the rest of the step")
        return (f"GPU busy {busy:.2f} ms of each {step:.2f} ms profiled step ({share:.0%}): {verdict}; a step "
                f"{self.kernels / per:,.0f} kernels, {self.host_waits / per:.1f} host waits on the GPU and "
                f"{self.to_host / per:.1f} copies to the host")


def busy(events: Iterable[dict[str, Any]]) -> Busy:
    """The Busy summary of a Chrome trace's events."""
    work: list[tuple[float, float]] = []
    kernels = waits = to_host = 0
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), str(e.get("name", ""))
        if cat in GPU_WORK:
            start = float(e["ts"])
            work.append((start, start + float(e.get("dur", 0.0))))
            kernels += cat == "kernel"
            to_host += cat == "gpu_memcpy" and "DtoH" in name
        elif cat == "cuda_runtime" and name in HOST_WAITS:
            waits += 1
    if not work:
        return Busy(0.0, 0.0, 0, waits, to_host)
    work.sort()
    total, end = 0.0, work[0][0]
    for start, stop in work:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return Busy(work[-1][1] - work[0][0], total, kernels, waits, to_host)


def read(path: Path) -> Busy:
    """busy() of a trace file; a file that is not a Chrome trace is a ValueError naming it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable Chrome trace ({err})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError(f"{path}: no traceEvents list: not a torch.profiler trace")
    return busy(e for e in events if isinstance(e, dict))


def main() -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--steps", type=int, default=1, help="steps the trace holds: the figures are per step")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error(f"argument --steps: {args.steps} is not a positive whole number")
    try:
        summary = read(args.trace)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if summary.kernels == 0:
        print(f"error: {args.trace}: no GPU kernels in the trace (a CPU run, or the profiler recorded no CUDA "
              "activity)", file=sys.stderr)
        return 2
    print(summary.line(args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
