"""What the harness's SLURM launcher (hydra/launcher=slurm: conf/hydra/launcher/slurm.yaml, class in
hydra_plugins/harness_slurm_launcher) does beyond hydra-submitit-launcher's, to keep a time-to-train
run's promises on a cluster.

    python -m harness.train -m hydra/launcher=slurm model=ncf device=cpu gpus=2 'seed=1,2'

In the submitting process, before anything is submitted: the request is fitted to the partition's
nodes (no GPU request for CPU ranks; cpus per task = the node's CPUs / its ranks unless given) and a
request that could never start is refused in one line (exit 2). Jobs are then watched through
squeue (no accounting database needed): a job pending for a reason that never clears is cancelled
and reported; a task that is cancelled, times out or fails is counted, never fatal to the sweep,
and every task's end is written to the sweep's slurm_tasks.json for its summary.

In each task (one rank): the thread policy is chosen before torch starts (the launcher's module,
which imports this one first, is the first of the task's pickle to load); SIGTERM (scancel, a time
limit, pre-emption) and submitit's time-limit/pre-emption signal (USR2, `signal_delay_s` before the
limit), which submitit itself would log and ignore, or answer with a requeue, end the run as Ctrl-C
does: run_stop aborted in mlperf.log and a result.json naming the signal. A run is never requeued:
a restarted run would restart its clock.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.run import threads

if os.environ.get("SUBMITIT_EXECUTOR") == "slurm" and "torch" not in sys.modules:
    # a submitit task: OpenMP reads its settings once, when torch loads it, which the rest of the
    # task's pickle is about to do
    threads.apply_at_start(__name__)

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from omegaconf import DictConfig, OmegaConf

from harness.errors import ConfigError
from harness.run import slurm_queue
from harness import files
from harness.signals import Stopped

log = logging.getLogger("harness.slurm")

TASKS_FILE = "slurm_tasks.json"
EXIT_USAGE = 2
# options every job of one submission shares: a sweep over them needs one command per value
_PER_SUBMISSION = ("gpus", "nodes", "device")
_stopped_in: Optional[str] = None  # in a task: the run directory a signal stopped (Hydra forgets it)


@dataclass(frozen=True)
class TaskEnd:
    """How one array task ended, as slurm_tasks.json keeps it."""

    num: int
    job_id: str
    overrides: list[str]
    state: str  # SLURM's: COMPLETED, CANCELLED, TIMEOUT, FAILED, ...
    ran: bool  # the harness ran in it and returned (its run's status is in its result.json)
    run_dir: Optional[str]
    stopped_by: Optional[str]  # the signal that stopped the task's run (SIGTERM, SIGUSR2), if one did
    note: str


def fit_request(config: DictConfig, params: dict[str, Any]) -> None:
    """Fit the launcher's params (hydra.launcher.*) to the partition, before anything is submitted;
    a request the cluster could never start ends the command with one line and exit status 2."""
    try:
        given = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        swept = [o.get_key_element() for o in given if o.is_sweep_override() and o.get_key_element() in _PER_SUBMISSION]
        if swept:
            raise ConfigError(f"{swept[0]} is swept, but hydra/launcher=slurm submits one resource request for "
                              f"all jobs: run one command per value of {swept[0]}")
        part = slurm_queue.partition(params.get("partition"))
        fitted = slurm_queue.fit(part, nodes=int(params["nodes"]), tasks_per_node=int(params["tasks_per_node"]),
                                 cpus_per_task=params.get("cpus_per_task"), device=str(config.device),
                                 timeout_min=int(params["timeout_min"]))
    except ConfigError as err:
        # Hydra would report a launcher's exception with a traceback and exit 1; this is a bad option
        print(f"harness.train: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    params["cpus_per_task"], params["gpus_per_node"] = fitted.cpus_per_task, fitted.gpus_per_node
    params["max_num_timeout"] = 0  # never requeued: the launcher's checkpoint() says why
    log.info("SLURM request: %s", fitted.note)


def stopped(err: KeyboardInterrupt) -> JobReturn:
    """What a task returns when a signal stopped its run (which already wrote its result.json)."""
    value = {"signal": getattr(err, "signal_name", "SIGINT"), "run_dir": _stopped_in}
    return JobReturn(status=JobStatus.COMPLETED, _return_value=value)


def run_array(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    """Submit the jobs as one array, wait for every task, and write how each ended to the sweep's
    slurm_tasks.json. Every JobReturn is COMPLETED for Hydra, whatever became of its task: a failed
    one would end the whole sweep before its summary, which counts the task from that file instead."""
    jobs = _submit(launcher, job_overrides, initial_job_idx)
    ends = _watch(jobs, [list(o) for o in job_overrides], initial_job_idx)
    _write_ends(Path(str(launcher.config.hydra.sweep.dir)) / TASKS_FILE, ends)
    return [JobReturn(overrides=e.overrides, status=JobStatus.COMPLETED, _return_value=e) for e in ends]


def _submit(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list:
    """One job array, submitted as hydra-submitit-launcher submits it; the jobs are returned instead
    of waited on (its own wait raises at the first task that did not return)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    params = dict(launcher.params)
    executor = submitit.AutoExecutor(cluster="slurm", folder=params.pop("submitit_folder"),
                                     slurm_max_num_timeout=params.pop("max_num_timeout"))
    shared = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{k if k in shared else f"slurm_{k}": v for k, v in params.items()})
    sweep_dir = str(launcher.config.hydra.sweep.dir)
    Path(sweep_dir).mkdir(parents=True, exist_ok=True)
    calls = []
    for num, overrides in enumerate(job_overrides, start=initial_job_idx):
        log.info("\t#%d : %s", num, " ".join(filter_overrides(overrides)))
        calls.append((list(overrides), "hydra.sweep.dir", num, f"job_id_for_{num}", Singleton.get_state()))
    jobs = executor.map_array(launcher, *zip(*calls))
    log.info("SLURM job %s: %d task(s); outputs in %s", jobs[0].job_id.split("_")[0], len(jobs), sweep_dir)
    return jobs


def stop_on_slurm_signals() -> None:
    """SIGTERM and submitit's USR signal raise Stopped in the task's main thread (in place of
    submitit's own handlers, which log SIGTERM and ignore it, and requeue on USR2)."""
    import submitit

    usr = submitit.JobEnvironment._usr_sig()

    def stop(signum: int, frame) -> None:
        global _stopped_in
        try:
            from hydra.core.hydra_config import HydraConfig

            _stopped_in = str(HydraConfig.get().runtime.output_dir)
        except ValueError:  # before Hydra set the job up: no run directory yet
            pass
        why = ": SLURM's time limit is near, or the job is pre-empted" if signum == usr else ""
        raise Stopped(signal.Signals(signum).name, why)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(usr, stop)


def _poll_interval(elapsed_s: float) -> float:
    return min(15.0, 1.0 + elapsed_s / 20)


def _watch(jobs: list, overrides: list[list[str]], first_num: int) -> list[TaskEnd]:
    """Wait for every job; the end of each, in submission order."""
    pending = {i: j for i, j in enumerate(jobs)}
    ends: dict[int, TaskEnd] = {}
    seen: dict[str, Any] = {}  # per job: the pending reason last said, when its result file appeared
    start = time.monotonic()
    try:
        while pending:
            now = slurm_queue.states({j.job_id.split("_")[0] for j in pending.values()})
            for i, job in list(pending.items()):
                state = now.get(job.job_id, slurm_queue.JobState("UNKNOWN"))
                end = _ended(job, state, first_num + i, overrides[i], seen)
                if end is not None:
                    ends[i] = end
                    del pending[i]
                    log.info("task %s (%s): %s%s", end.job_id, " ".join(end.overrides), end.state,
                             f": {end.note}" if end.note else "")
            if pending:
                time.sleep(_poll_interval(time.monotonic() - start))
    except KeyboardInterrupt:
        ids = sorted({j.job_id.split("_")[0] for j in pending.values()})
        print(f"harness.train: stopped watching; the jobs keep running (scancel {' '.join(ids)} stops them)",
              file=sys.stderr)
        raise SystemExit(130) from None  # no run of this process to mark aborted
    return [ends[i] for i in range(len(jobs))]


def _finished(job) -> bool:
    return all(job.task(t).paths.result_pickle.exists() for t in range(job.num_tasks))


_SETTLE_S = 60.0  # after a task returned, how long SLURM may take to say how its job ended


def _ended(job, state: slurm_queue.JobState, num: int, overrides: list[str], seen: dict) -> Optional[TaskEnd]:
    """The task's end once it has one (its result file, and SLURM's last word on the job: a
    cancelled job's task returns while the job is still COMPLETING); says a pending reason once."""
    if _finished(job):
        returned_at = seen.setdefault(("returned", job.job_id), time.monotonic())
        if state.ended or time.monotonic() - returned_at > _SETTLE_S:
            return _outcome(job, state.state if state.state in slurm_queue.ENDED else "COMPLETED", num, overrides)
        return None
    if state.never_starts:
        slurm_queue.cancel(job.job_id)
        return TaskEnd(num, job.job_id, overrides, "CANCELLED", False, None, None,
                       f"cannot start ({state.reason}): cancelled; fit the request to the partition")
    if state.state == "PENDING" and seen.get(job.job_id) != state.reason:
        seen[job.job_id] = state.reason
        log.info("task %s pending (%s)", job.job_id, state.reason or "no reason given")
    if state.ended:
        time.sleep(2)  # a task that returned writes its result file just before its job ends
        if _finished(job):
            return _outcome(job, state.state if state.state in slurm_queue.ENDED else "COMPLETED", num, overrides)
        return TaskEnd(num, job.job_id, overrides, state.state, False, None, None,
                       f"ended without a result; its log: {job.paths.stderr}")
    return None


def _outcome(job, slurm_state: str, num: int, overrides: list[str]) -> TaskEnd:
    try:
        returned = job.task(0).result()
    except Exception as err:  # the task raised outside the harness's run (submitit, Hydra)
        return TaskEnd(num, job.job_id, overrides, slurm_state, False, None, None, str(err).splitlines()[0])
    value = returned.return_value if returned.status == JobStatus.COMPLETED else None
    if isinstance(value, dict):  # stopped(): the run dir and the signal
        run_dir, signame = value["run_dir"], value["signal"]
    else:
        run_dir, signame = str(returned.hydra_cfg.hydra.runtime.output_dir), None
    if run_dir is None:
        return TaskEnd(num, job.job_id, overrides, slurm_state, False, None, signame,
                       f"stopped by {signame} before its run began")
    note = f"stopped by {signame}" if signame else ""
    result = Path(run_dir) / "result.json"
    if result.is_file():
        record = json.loads(result.read_text())
        note = f"run {record.get('status')}" + (f" ({record['reason']})" if record.get("reason") else "")
    return TaskEnd(num, job.job_id, overrides, slurm_state, True, run_dir, signame, note)


def _write_ends(path: Path, ends: list[TaskEnd]) -> None:
    old = json.loads(path.read_text()) if path.exists() else []  # several batches of one sweep
    files.write_atomic(path, json.dumps(old + [asdict(e) for e in ends], indent=1))
