"""How many OpenMP threads each CPU rank runs, and how they wait: chosen by measurement, set before
torch starts its OpenMP runtime.

OpenMP's default is a team of one thread per core that spins while it waits. On a machine where
something else holds a core, a spinning team waits on a thread that is not running, and an embedded
NCF run went from 4 s to 142 s (docs/benchmarks/cpu_policy_*.md). So each rank gets

- threads = the usable CPUs (os.sched_getaffinity) less those other processes keep busy (measured
  over a quarter of a second, harness/observe/host_load.py), split among the ranks on this host;
- OMP_WAIT_POLICY=PASSIVE: a waiting thread sleeps instead of spinning, so a core taken away
  mid-run slows the run by that core's share, not by the spinning.

The choice goes into OMP_NUM_THREADS / OMP_WAIT_POLICY (OpenMP reads them once, when torch
starts it) and HARNESS_THREAD_POLICY (what was chosen and why, for result.json and for processes
started later). A user's own OMP_NUM_THREADS or OMP_WAIT_POLICY wins: the harness then sets
neither. Where it is applied: first thing in harness.train's and harness.sweep's main(), before
anything imports torch, for the command's own process (a run, a multirun's jobs) and for a torchrun
or srun rank; in harness/run/slurm.py for a submitit task; in harness/run/launch.py for
the ranks it spawns (which inherit it through the environment); in harness/bench/start.py for the
process that forks harness.bench's CPU cells, and anew in each cell (apply_in_fork); in tests/conftest.py
for the test suite. Importing a harness module applies nothing.

    python -m harness.check.show host         # what a run started now would choose
"""
from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import asdict, dataclass
from typing import Optional

from harness.errors import ConfigError
from harness.observe import host_load
from harness.run import slurm_binding
from harness.run.world import from_environment

ENV = "HARNESS_THREAD_POLICY"
_OMP = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")
log = logging.getLogger("harness.threads")


@dataclass(frozen=True)
class ThreadPolicy:
    omp_num_threads: Optional[int]  # None: the user set OMP_WAIT_POLICY alone; OpenMP's default count
    omp_wait_policy: Optional[str]
    chosen_by: str  # "harness" or "user"
    reason: str
    local_ranks: int = 1
    other_cpu_pct: Optional[float] = None  # what the measurement saw, percent of one core

    def record(self, torch_threads: Optional[int] = None) -> dict:
        """result.json's "threads" (docs/results.md)."""
        return {"omp_num_threads": self.omp_num_threads, "omp_wait_policy": self.omp_wait_policy,
                "torch_threads": torch_threads if torch_threads is not None else self.omp_num_threads,
                "chosen_by": self.chosen_by, "reason": self.reason}


def choose(cpus: int, other_cpu_pct: Optional[float], local_ranks: int) -> ThreadPolicy:
    """The harness's choice for `local_ranks` ranks sharing `cpus` CPUs while others use
    `other_cpu_pct` percent of one core (None: not measurable here)."""
    busy = 0 if other_cpu_pct is None else min(cpus - 1, round(other_cpu_pct / 100))
    threads = max(1, (cpus - busy) // max(local_ranks, 1))
    seen = "load not measurable" if other_cpu_pct is None else f"{busy} kept busy by other processes"
    return ThreadPolicy(threads, "PASSIVE", "harness",
                        f"{cpus} usable CPUs, {seen}, {local_ranks} local rank(s)", local_ranks, other_cpu_pct)


def too_many_ranks(local_ranks: int, cpus: Optional[int] = None) -> Optional[str]:
    """What to say when more CPU ranks start on this host than it has usable CPUs (they take turns, and
    time to train measures the turns); None when each rank has a core."""
    cpus = cpus or len(host_load.usable_cpus())
    if local_ranks <= cpus:
        return None
    return (f"{local_ranks} CPU ranks on {cpus} usable CPU(s): more ranks than cores take turns on them, and time "
            f"to train measures that; ask for gpus={cpus} or fewer on this host")


CROWD = 4  # CPU ranks per usable CPU beyond which a run is refused, not warned about


def far_too_many_ranks(local_ranks: int, cpus: Optional[int] = None) -> Optional[str]:
    """The refusal of more than CROWD CPU ranks a usable CPU: each rank is a process that loads torch and
    its model, and gpus=1000 on 2 cores had 57 ranks started after 120 s and the machine's memory filling."""
    cpus = cpus or len(host_load.usable_cpus())
    if local_ranks <= CROWD * cpus:
        return None
    return (f"gpus={local_ranks}: {local_ranks} CPU ranks on {cpus} usable CPU(s), more than {CROWD} a CPU (each rank "
            f"is a process that loads torch and the model); ask for gpus={CROWD * cpus} or fewer on this host, or run "
            "on GPUs")


def _user_policy(env) -> Optional[ThreadPolicy]:
    """The user's own OpenMP settings: set, and not what the harness put there for this tree."""
    inherited = _inherited(env)
    ours = {} if inherited is None else {"OMP_NUM_THREADS": str(inherited.omp_num_threads),
                                         "OMP_WAIT_POLICY": str(inherited.omp_wait_policy)}
    if inherited is not None and inherited.chosen_by == "user":
        return inherited
    users = {k: env[k] for k in _OMP if k in env and env[k] != ours.get(k)}
    if not users:
        return None
    count = _counts(env["OMP_NUM_THREADS"]) if "OMP_NUM_THREADS" in users else None
    policy = users.get("OMP_WAIT_POLICY", "passive")
    if count == [] or policy.strip().upper() not in ("ACTIVE", "PASSIVE"):
        # OpenMP ignores such a value with a line of its own and starts a spinning team of one thread per core,
        # while result.json said the user had chosen: NCF's 4 s run took 100 s on a busy 2-core host
        name, value = next((k, v) for k, v in users.items() if k != "OMP_NUM_THREADS" or count == [])
        what = "a thread count, a whole number from 1" if name == "OMP_NUM_THREADS" else "PASSIVE or ACTIVE"
        raise ConfigError(f"{name}={value!r} is not {what} (OpenMP would ignore it); set it so, or unset it and "
                          "the harness picks the threads from the host's load")
    return ThreadPolicy(count[0] if count else None, env.get("OMP_WAIT_POLICY"), "user",
                        "set by the user: " + ", ".join(f"{k}={v}" for k, v in users.items()))


def _counts(value: str) -> list[int]:
    """OMP_NUM_THREADS's counts, one per nesting level ('4' or '4,2'); [] for what OpenMP refuses."""
    parts = [p.strip() for p in value.split(",")]
    return [int(p) for p in parts] if all(p.isdigit() and int(p) > 0 for p in parts) else []


def check_user_settings(env=os.environ) -> None:
    """ConfigError for an OpenMP setting of the user's that OpenMP would ignore (before anything starts)."""
    _user_policy(env)


def _inherited(env) -> Optional[ThreadPolicy]:
    try:
        return ThreadPolicy(**json.loads(env[ENV])) if ENV in env else None
    except (ValueError, TypeError):
        return None


def decide(local_ranks: int, root: Optional[int] = None, env=os.environ) -> ThreadPolicy:
    """The user's settings if any, else the harness's choice from a fresh measurement."""
    user = _user_policy(env)
    if user is not None:
        return user
    cpus = len(host_load.usable_cpus())
    return choose(cpus, host_load.measure(root), local_ranks)


def export(policy: ThreadPolicy, env=os.environ) -> None:
    """Put the policy where OpenMP and later processes read it."""
    if policy.chosen_by == "harness":
        env["OMP_NUM_THREADS"] = str(policy.omp_num_threads)
        env["OMP_WAIT_POLICY"] = str(policy.omp_wait_policy)
    env[ENV] = json.dumps(asdict(policy))


_current: Optional[ThreadPolicy] = None


def apply_at_start(main_name: str = "__main__") -> ThreadPolicy:
    """Called first thing in harness.train's main(), before torch is imported (once per process:
    later calls return the same policy). A spawned rank (main_name "__mp_main__") keeps what its
    launcher chose for it; any other process decides for the local ranks its launcher started (1 on
    its own)."""
    global _current
    inherited = _inherited(os.environ)
    if main_name == "__mp_main__" and inherited is not None:
        _current = inherited
        return inherited
    if _current is not None:
        return _current
    _current = _decide_for_this_process()
    export(_current)
    torch = sys.modules.get("torch")
    if torch is not None and _current.omp_num_threads:
        # a command imported torch before choosing: its OpenMP already read the environment. The count
        # can still be set; the wait policy cannot (tests/run/test_threads.py keeps every command from this)
        torch.set_num_threads(_current.omp_num_threads)
        log.warning("threads: torch was loaded before the thread policy; OMP_WAIT_POLICY=%s did not reach "
                    "OpenMP", _current.omp_wait_policy)
    return _current


def _decide_for_this_process() -> ThreadPolicy:
    world = from_environment()
    local_ranks = 1 if world is None else world.local_world_size
    if world is not None and world.source == "slurm":
        local_ranks = slurm_binding.ranks_sharing(local_ranks)
    return decide(local_ranks, root=host_load.run_root("single" if world is None else world.source))


def apply_in_fork(environ: dict[str, str]) -> ThreadPolicy:
    """In a child forked from a process that applied the policy first thing and loaded torch
    (harness/bench/start.py's cells): the environment back to `environ`, as that process started, and
    the policy chosen anew from it, as a process started now would choose it (the harness's measures
    the load now). The parent's OpenMP started with the same wait policy (the harness's is always
    PASSIVE; a user's is in `environ`); the thread count is set here."""
    global _current
    os.environ.clear()
    os.environ.update(environ)
    _current = _decide_for_this_process()
    export(_current)
    torch = sys.modules.get("torch")
    if torch is not None and _current.omp_num_threads:
        torch.set_num_threads(_current.omp_num_threads)
    return _current


def current() -> ThreadPolicy:
    """The policy this process runs under (deciding now if nothing did yet, as in a test)."""
    global _current
    if _current is None:
        _current = _inherited(os.environ) or decide(1)
    return _current

