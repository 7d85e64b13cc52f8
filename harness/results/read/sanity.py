"""The harness's own sanity pass over a log's events: what the official checker lets through.

- the timed events (init_stop, run_start, blocks, epochs, evaluations, run_stop) in time order:
  a timestamp earlier than an event logged before it means a clock that went backwards or lines
  that were edited. init_start is left out: every rank logs it, and ranks on different nodes
  disagree by their clocks' skew (16 s on v0.6's 16-node DGX-2H runs);
- run_stop not before run_start;
- epoch numbers of epochs and evaluations never going backwards.

Each finding is one line naming the log lines. They are warnings: `harness.check` prints them
beside the official verdict and `harness.report` lists them on the run, which is still scored, as
MLPerf's scores are what its own checker and summarizer say (real rounds have such logs: stable
diffusion's offline evaluations are logged after a run_stop with an earlier timestamp).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from harness.results.read.formats import Record

TIMED = frozenset({"init_stop", "run_start", "block_start", "block_stop", "epoch_start", "epoch_stop", "eval_start",
                   "eval_accuracy", "eval_stop", "run_stop", "train_epoch"})
EPOCH_KEYS = frozenset({"epoch_start", "epoch_stop", "eval_accuracy", "train_epoch"})


def epoch_of(r: Record) -> Optional[float]:
    """The epoch a record names: metadata epoch_num (v0.6 on), or v0.5's value."""
    if "epoch_num" in r.meta:
        e: Any = r.meta["epoch_num"]
    elif r.key == "train_epoch":
        e = r.value
    elif r.key == "eval_accuracy" and isinstance(r.value, dict):
        e = r.value.get("epoch")
    else:
        return None
    return float(e) if isinstance(e, (int, float)) and not isinstance(e, bool) else None


def check(records: Sequence[Record]) -> list[str]:
    problems: list[str] = []
    start = next((r for r in records if r.key == "run_start"), None)
    stop = next((r for r in records if r.key == "run_stop"), None)
    stop_first = start is not None and stop is not None and stop.t < start.t
    latest: Optional[Record] = None
    for r in records:
        if r.key not in TIMED or (stop_first and r is stop):  # that one has its own message below
            continue
        if latest is not None and r.t < latest.t:
            problems.append(f"timestamps go backwards: line {r.lineno} ({r.key}) is {(latest.t - r.t) / 1000:.3f} s "
                            f"before line {latest.lineno} ({latest.key})")
            break
        latest = r
    if stop_first and start is not None and stop is not None:
        problems.append(f"run_stop (line {stop.lineno}) is {(start.t - stop.t) / 1000:.3f} s before run_start "
                        f"(line {start.lineno})")
    for key in sorted(EPOCH_KEYS):
        last: Optional[tuple[float, Record]] = None
        for r in records:
            if r.key != key or (epoch := epoch_of(r)) is None:
                continue
            if last is not None and epoch < last[0]:
                problems.append(f"epochs go backwards: {key} at line {r.lineno} has epoch {epoch:g} after "
                                f"epoch {last[0]:g} at line {last[1].lineno}")
                break
            last = (epoch, r)
    return problems
