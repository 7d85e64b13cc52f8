"""Where runs write: run and sweep directories that no two runs share, and folders checked before
anything is written.

conf/config.yaml names its directories through the resolvers registered here: a run of its own
gets a time-stamped directory that this process creates atomically (mkdir fails for a second
process that picks the same name: it takes the next one), the ranks of one distributed run find
the same directory by a stamp they share (run_id, torchrun's rendezvous id, the SLURM step), and a
named directory that already holds a run is refused by `check_run_dirs` before Hydra writes there.

    python -c "from harness.outputs import _run_dir; print(_run_dir('outputs', 'nightly', 'ncf'))"
"""
from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Callable, Optional

from omegaconf import DictConfig, OmegaConf

from harness.errors import ConfigError
from harness.run.world import from_environment


def _shared_stamp(run_id: Optional[str] = None) -> Optional[str]:
    """The run directory's name stem when every process of one distributed run must find the same
    one (run_id, torchrun, srun); None for a run of its own, which gets a fresh time stamp."""
    env = os.environ
    if run_id:
        return f"run-{run_id}"
    if env.get("TORCHELASTIC_RUN_ID") not in (None, "", "none") and "RANK" in env:
        return f"torchrun-{env['TORCHELASTIC_RUN_ID']}"
    if "SLURM_PROCID" in env and int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_STEP_ID" in env:
        array = f"_{env['SLURM_ARRAY_TASK_ID']}" if "SLURM_ARRAY_TASK_ID" in env else ""
        return f"slurm-{env.get('SLURM_JOB_ID', 'job')}.{env['SLURM_STEP_ID']}{array}"
    return None


def claim_dir(make_path: Callable[[int], Path]) -> Path:
    """A new directory, created here and nowhere else: mkdir is atomic, so two processes that pick
    the same name in the same instant get make_path(0) and make_path(1) (then 2, ...)."""
    for attempt in range(10_000):
        path = make_path(attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"no free directory name beside {make_path(0)}")


def _run_dir(output_root: str, run_id: Optional[str], model: str) -> str:
    """hydra.run.dir: <output_root>/runs/<stamp>_<model>, claimed when the run has it to itself."""
    shared = _shared_stamp(run_id)
    if shared is not None:
        return str(Path(output_root) / "runs" / f"{shared}_{model}")
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f")
    return str(claim_dir(lambda n: Path(output_root) / "runs" / (f"{now}_{model}" + (f"-{n + 1}" if n else ""))))


def _sweep_dir(output_root: str, model: str) -> str:
    """hydra.sweep.dir: <output_root>/sweeps/<time>_<model>[-n], claimed."""
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return str(claim_dir(lambda n: Path(output_root) / "sweeps" / (f"{now}_{model}" + (f"-{n + 1}" if n else ""))))


def _main_rank_only(value: str) -> Optional[str]:
    """Hydra's .hydra/ record is written by rank 0 alone when several processes share a run dir."""
    env = os.environ
    rank = env.get("RANK", env.get("SLURM_PROCID", "0") if int(env.get("SLURM_NTASKS", "1")) > 1 else "0")
    return value if rank == "0" else None


# cached, and Hydra copies the cache into each job's config: a directory is claimed once
OmegaConf.register_new_resolver("harness_run_dir", _run_dir, use_cache=True, replace=True)
OmegaConf.register_new_resolver("harness_sweep_dir", _sweep_dir, use_cache=True, replace=True)
OmegaConf.register_new_resolver("harness_main_rank_only", _main_rank_only, use_cache=True, replace=True)


def check_paths(cfg: DictConfig) -> None:
    """output_root must be (or become) a folder this user can write; data_root must not be a file
    (it may be read-only: a mounted real dataset). Checked before anything is written."""
    for key, writable in (("output_root", True), ("data_root", False)):
        path = Path(str(OmegaConf.select(cfg, key)))
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{key}={path} is a file, not a folder; choose a folder")
        existing = path
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise ConfigError(f"{key}={path} lies under {existing}, which is a file; choose a folder")
        if writable and not os.access(existing, os.W_OK | os.X_OK):
            raise ConfigError(f"{key}={path}: {existing} is not writable by this user; choose another {key}")


def check_run_dirs(cfg: DictConfig, hydra_overrides: list[str], multirun: bool) -> None:
    """A run or sweep directory that already holds a run is refused, not written over: run_id
    names a run once (every node of that run shares its directory), so does a torchrun rendezvous
    id or a SLURM step, and so does a directory given as hydra.run.dir or hydra.sweep.dir."""
    given = dict(o.split("=", 1) for o in hydra_overrides if "=" in o)
    if multirun:
        sweep = given.get("hydra.sweep.dir")
        if sweep and (Path(sweep) / "multirun.yaml").exists():
            raise ConfigError(f"hydra.sweep.dir={sweep} already holds a sweep; choose a new folder")
        return
    world = from_environment()
    if world is not None and not world.is_main:
        return  # torchrun/srun: rank 0 checks; the other ranks make the same directory meanwhile
    outside = world is not None
    if "hydra.run.dir" in given:
        run_dir, alone = Path(given["hydra.run.dir"]), False
    else:
        stamp = _shared_stamp(cfg.run_id)
        if stamp is None:
            return  # a fresh time stamp, claimed when Hydra makes the directory
        run_dir = Path(str(cfg.output_root)) / "runs" / f"{stamp}_{cfg.model.name}"
        alone = cfg.run_id is not None and cfg.nodes == 1 and not outside  # no other process shares it
    if not run_dir.exists():
        return
    held = [n for n in ("result.json", "mlperf.log") if (run_dir / n).exists()]
    if held or alone:
        what = f"holds {held[0]}" if held else "exists"
        hint = "choose a new run_id" if cfg.run_id else "choose a new folder or rendezvous id"
        raise ConfigError(f"{run_dir} {what}: a run directory names one run; {hint}")
