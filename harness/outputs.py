"""Where runs write: run and sweep directories that no two runs share, and folders checked before
anything is written.

conf/config.yaml names its directories through the resolvers registered here: a run of its own
gets a time-stamped directory that this process creates atomically (mkdir fails for a second
process that picks the same name: it takes the next one); under torchrun rank 0 claims one the same
way and the other ranks read its name from the rendezvous store; the ranks of a run named by run_id
or a SLURM step share the directory that name gives. A named directory that already holds a run is
refused by `check_run_dirs`, and a run_id's directory is claimed by `claim_run_dir` (mkdir again:
of two runs started with one run_id, one gets it) before Hydra writes anything there.

    python -c "from harness.outputs import _run_dir; print(_run_dir('outputs', 'nightly', 'ncf'))"
"""
from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Callable, Optional

from omegaconf import DictConfig, OmegaConf

from harness.errors import ConfigError
from harness.run.world import from_environment


def _shared_stamp(run_id: Optional[str] = None) -> Optional[str]:
    """The run directory's name stem when every process of one distributed run must find the same
    one by name (run_id, srun; torchrun without its agent's store); None for a run that gets a fresh
    time stamp (a run of its own, or torchrun's ranks, which share rank 0's through the store)."""
    env = os.environ
    if run_id:
        return f"run-{run_id}"
    if _torchrun(env) and env.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
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
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
            return path
        except FileExistsError:
            if not path.parent.is_dir():
                raise ConfigError(f"cannot make {path}: {path.parent} is not a folder; choose another "
                                  "output_root") from None
            continue
        except OSError as err:  # a folder this user cannot write, a link to one that is not there
            raise ConfigError(f"cannot make {path}: {err.strerror or err}; choose another output_root") from None
    raise ConfigError(f"no free directory name beside {make_path(0)}")


def _torchrun(env) -> bool:
    return env.get("TORCHELASTIC_RUN_ID") not in (None, "", "none") and "RANK" in env


def _run_dir(output_root: str, run_id: Optional[str], model: str) -> str:
    """hydra.run.dir: <output_root>/runs/<stamp>_<model>, claimed when the run has it to itself."""
    shared = _shared_stamp(run_id)
    if shared is not None:
        return str(Path(output_root) / "runs" / f"{shared}_{model}")
    if _torchrun(os.environ):
        return _torchrun_dir(output_root, model)
    return _stamped_dir(output_root, model)


def _stamped_dir(output_root: str, model: str) -> str:
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f")
    return str(claim_dir(lambda n: Path(output_root) / "runs" / (f"{now}_{model}" + (f"-{n + 1}" if n else ""))))


def _torchrun_dir(output_root: str, model: str, timeout_s: float = 300) -> str:
    """torchrun's ranks in one time-stamped directory: rank 0 claims it and leaves its name in the
    rendezvous store that torchrun's agent runs (MASTER_ADDR:MASTER_PORT); the others wait for it."""
    from torch.distributed import TCPStore

    env = os.environ
    store = TCPStore(env["MASTER_ADDR"], int(env["MASTER_PORT"]), is_master=False,
                     timeout=datetime.timedelta(seconds=timeout_s))
    key = f"harness/run_dir/{env['TORCHELASTIC_RUN_ID']}/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    if env.get("RANK") == "0":
        path = _stamped_dir(output_root, model)
        store.set(key, path)
        return path
    return store.get(key).decode()


def _sweep_dir(output_root: str, model: str) -> str:
    """hydra.sweep.dir: <output_root>/sweeps/<time>_<model>[-n], claimed (harness.train -m passes
    the one it claimed itself, so that it can read the sweep's summary when the sweep ends)."""
    return str(claim_sweep_dir(output_root, model))


def _main_rank_only(value: str) -> Optional[str]:
    """Hydra's .hydra/ record is written by rank 0 alone when several processes share a run dir."""
    env = os.environ
    rank = env.get("RANK", env.get("SLURM_PROCID", "0") if int(env.get("SLURM_NTASKS", "1")) > 1 else "0")
    return value if rank == "0" else None


# cached, and Hydra copies the cache into each job's config: a directory is claimed once
OmegaConf.register_new_resolver("harness_run_dir", _run_dir, use_cache=True, replace=True)
OmegaConf.register_new_resolver("harness_sweep_dir", _sweep_dir, use_cache=True, replace=True)
OmegaConf.register_new_resolver("harness_main_rank_only", _main_rank_only, use_cache=True, replace=True)


def _unwritable(folder: Path) -> str:
    """Why this user cannot write `folder`: a read-only mount (a container's, root included) is not a matter
    of permissions, which chmod would not fix."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "is on a read-only file system"
    except OSError:
        pass
    return "is not writable by this user"


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
            raise ConfigError(f"{key}={path}: {existing} {_unwritable(existing)}; choose another {key}")
    root = Path(str(cfg.output_root))
    for folder in (root / "runs", root / "sweeps"):  # where every run and sweep directory is made
        if folder.is_symlink() or folder.exists():
            if not folder.is_dir():
                raise ConfigError(f"output_root={root}: {folder} is not a folder (or a link to none); move it "
                                  "or choose another output_root")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ConfigError(f"output_root={root}: {folder} {_unwritable(folder)}; choose another output_root")


ROOTS = ("output_root", "data_root", "dataset.path")
_INTERPOLATION = re.compile(r"\$\{([^{}]*)\}")


def check_roots(cfg: DictConfig) -> None:
    """A folder option that is empty, or that an interpolation inside it leaves empty (`output_root=`
    makes data_root's default /datasets), would put the runs or the data at the file system's root:
    refused, naming the option that is empty."""
    for key in ROOTS:
        if key == "dataset.path" and cfg.get("dataset") is None:
            continue  # no dataset (a throughput-only model)
        node = OmegaConf.select(cfg, key, throw_on_missing=False)
        if node is None or not str(node).strip():
            raise ConfigError(f"{key} is empty, which would put {'runs' if key == 'output_root' else 'data'} "
                              f"at the file system's root; give it a folder ({key}=<folder>)")
        raw = _unresolved(cfg, key)
        for inner in _INTERPOLATION.findall(raw):
            if not _resolved(cfg, inner).strip():
                raise ConfigError(f"{key}={raw}: ${{{inner}}} is empty, which would put it at the file system's "
                                  f"root; give {inner.rpartition(':')[2].split(',')[0] or inner} a folder")


def _unresolved(cfg: DictConfig, key: str) -> str:
    node = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def _resolved(cfg: DictConfig, inner: str) -> str:
    """What one interpolation of a folder option gives: a key of the config, or a resolver's value
    (oc.env:NAME,default)."""
    if ":" not in inner:
        return str(OmegaConf.select(cfg, inner, default=""))
    try:
        return str(OmegaConf.create({"value": "${" + inner + "}"}).value)
    except Exception:  # a resolver that needs the whole config: the composition resolved it already
        return "?"


START_ROOM = 4 << 20  # bytes: Hydra's records, the run's reserve (harness.observe.disk) and its first lines


def check_room(cfg: DictConfig) -> None:
    """The disk that will hold output_root must have room for a run to start: where it has not, Hydra
    would make the run directory and stop on its first record with a traceback, leaving the folder."""
    path = Path(str(cfg.output_root))
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        st = os.statvfs(existing)
    except OSError:
        return  # nothing to measure it by: the run's own writes say so if the disk is full
    free = st.f_bavail * st.f_frsize
    if free < START_ROOM or (st.f_files and not st.f_favail):
        what = f"{free // 1024:,} kB free" if free < START_ROOM else "no free inodes"
        raise ConfigError(f"output_root={path}: the disk holding {existing} is full ({what}; a run needs "
                          f"{START_ROOM >> 20} MiB to start); free space or choose another output_root")


def sweep_name(cfg: DictConfig, overrides: list[str], device: str) -> str:
    """What a sweep runs, for its folder's name: 'ncf_1xcpu_fp32', or 'gnmt_1+2xcuda_fp32+amp' where the
    sweep takes several values of an axis. `cfg` is its first job's config; a precision left to the
    model reads as the one it runs in on `device` (harness.fastpath)."""
    from harness import registry

    given = dict(o.split("=", 1) for o in overrides if "=" in o and not o.startswith(("hydra", "+", "~")))

    def axis(key: str, value: object) -> str:
        swept = given.get(key, "")
        if "," not in swept:
            return str(value)
        # a sweep's values, joined by +; an expression such as range(1,3) keeps its letters and digits only
        return re.sub(r"[^\w.+-]", "", "+".join(v.strip() for v in swept.split(",")))

    precision = cfg.precision or (registry.get(str(cfg.model.name)).gpu_precision if device == "cuda" else "fp32")
    return f"{axis('model', cfg.model.name)}_{axis('gpus', cfg.gpus)}x{device}_{axis('precision', precision)}"


def claim_sweep_dir(output_root: str, name: str, suffix: str = "") -> Path:
    """<output_root>/sweeps/<time>_<name><suffix>[-n], created here (harness.sweep's, and a -m run's);
    `name`: sweep_name's."""
    now = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return claim_dir(lambda n: Path(output_root) / "sweeps" / (f"{now}_{name}{suffix}" + (f"-{n + 1}" if n else "")))


def claim_run_dir(cfg: DictConfig) -> None:
    """A run_id's directory, created by the one run that gets it (mkdir is atomic): of two runs
    started at once with the same run_id, the second is refused. The nodes of a multi-node run share
    their run_id's directory, and an outside launcher's ranks share theirs: nothing to claim."""
    if not cfg.run_id or cfg.nodes != 1 or from_environment() is not None:
        return
    run_dir = Path(str(cfg.output_root)) / "runs" / f"{_shared_stamp(cfg.run_id)}_{cfg.model.name}"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_dir.mkdir()
    except FileExistsError:
        raise ConfigError(f"{run_dir} exists: a run directory names one run; choose a new run_id") from None


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
