"""One run as the report sees it: what its log (and, for harness runs, its result.json) says.

Built by harness.results.parse from a log of any round, or from a harness run's result.json alone.
Fields are documented in docs/report.md (the JSON schema's "runs").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

SUCCESS = "success"
INCOMPLETE = "incomplete"  # no run_stop: crashed, killed or still running


class LogError(ValueError):
    """A file that holds no run that can be read; the message names the problem."""


@dataclass
class RunSummary:
    path: str
    benchmark: Optional[str] = None
    status: str = INCOMPLETE  # run_stop's status (success, aborted, ...) or incomplete
    org: Optional[str] = None
    division: Optional[str] = None
    platform: Optional[str] = None
    seed: Optional[int] = None
    world_size: Optional[int] = None  # nodes x accelerators per node: the log's keys or the tree's system file
    precision: Optional[str] = None  # a harness extension key; absent from official logs
    global_batch_size: Optional[int] = None
    run_start_ms: Optional[float] = None
    run_stop_ms: Optional[float] = None
    time_to_train_s: Optional[float] = None
    time_to_train_min: Optional[float] = None
    init_time_s: Optional[float] = None  # init_stop - first init_start
    epochs_to_converge: Optional[float] = None
    evals: list[tuple[Any, Any]] = field(default_factory=list)  # (epoch_num, eval_accuracy: a number or named parts)
    throughput: Optional[float] = None  # tracked_stats samples / seconds, or derived (below)
    timestamp_unit: str = "ms"
    problems: list[str] = field(default_factory=list)  # why this run cannot be scored as it is
    # from the harness's files beside the log (result.json, system.json); absent from official logs
    accelerator: Optional[str] = None  # the GPU model, or CPU (official logs: the tree's system description)
    energy_j: Optional[float] = None  # energy to train: run_start..run_stop, all GPUs of the run
    power_w: Optional[float] = None  # mean power over that window, all GPUs of the run
    # where the run comes from and how its numbers were read
    round: Optional[str] = None  # "v0.5", "v0.6", "v0.7", ... ("v0.7+" for an MLLOG log outside a tree)
    log_format: Optional[str] = None  # "MLPv0.5.0", "MLL", "MLLOG"; None for a result.json without a log
    system: Optional[str] = None  # the system's name in its submission tree
    framework: Optional[str] = None
    throughput_unit: Optional[str] = None  # "samples/s", "tokens/s", "epochs/s" (derived without a sample count)
    throughput_derived: bool = False  # from the epoch (or block) intervals, not from tracked_stats
    target: Any = None  # the target as the log or result.json states it (v0.5's eval_target), else None
    quality_metric: Optional[str] = None
    quality_direction: Optional[str] = None  # "higher" or "lower" is better, where the run says
    epoch_unit: str = "epochs"  # "samples" for a harness run evaluated every N samples
    busy: Optional[bool] = None  # result.json host_load.busy: other processes used the machine during the run
    host_note: Optional[str] = None  # host_load.note
    submitter_scored: Optional[bool] = None  # listed in the tree's first_50_success_file (v0.5 NCF); None: no list
    data_wait_s: Optional[float] = None  # result.json: rank 0's wait for batches over the counted steps
    data_wait_share: Optional[float] = None  # data_wait_s / training seconds of those steps (0..1)

    @property
    def scorable(self) -> bool:
        """Clean enough for MLPerf's summarizer to score: it drops runs with any parse problem."""
        return not self.problems

    @property
    def converged(self) -> bool:
        return self.status == SUCCESS and self.scorable

    @property
    def final_quality(self) -> Any:
        return self.evals[-1][1] if self.evals else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evals"] = [list(e) for e in self.evals]
        out["scorable"] = self.scorable
        return out
