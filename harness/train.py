"""Train a reference model to its quality target and record the run.

    python -m harness.train model=ncf seed=1                  one run, embedded data
    python -m harness.train model=ncf dataset=ml20m seed=1    real data, real-scale preset
    python -m harness.train -m model=ncf 'seed=range(1,6)'    a sweep: one run directory per job
    python -m harness.train model=bert_large mode=throughput  samples/s on the model's synthetic batch
    python -m harness.train --cfg job                         print the composed config
    python -m harness.train --help model=gnmt                 every option, documented

Each run writes outputs/runs/<date>_<time>_<model>/ (docs/results.md): config.yaml, mlperf.log,
result.json (status, time to train, epochs to converge, throughput, data wait, per-epoch losses and
loss terms), train.log, system.json, telemetry.jsonl and tb/. A loss that turns NaN or infinite ends
the run as failed, naming the step, epoch, loss term and rank; a disk that fills ends it at once.
Exit status: 0 when every run finished (reached its target or not: the status is in mlperf.log and
result.json), 1 when a run failed, 2 for a bad option or a missing dataset (nothing is written),
130 when interrupted by Ctrl-C, 143 when stopped by SIGTERM (128 + the signal's number).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

from omegaconf import DictConfig, OmegaConf

from harness.interface.option_help import module_doc
from harness import registry
from harness.config import HarnessConfig, check_cli, compose
from harness.config.presets import CONF_DIR, datasets_for
from harness.errors import ConfigError
from harness.interface import DataError
from harness.outputs import check_paths, check_room, check_run_dirs, claim_run_dir, claim_sweep_dir, sweep_name
from harness import record as rec
from harness.run import threads
from harness.signals import signal_name, signal_number, stop_on_sigterm

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# Hydra's flags that take a value as the next word (`--cfg job`); the value is not an override
_VALUE_FLAGS = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                "--config-dir", "-cd", "--experimental-rerun"}
_INFO_TOPICS = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def overrides_of(args: list[str]) -> list[str]:
    """The key=value overrides of a command line, without Hydra's flags and their values."""
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in _VALUE_FLAGS or (a in ("--info", "-i") and i + 1 < len(args) and args[i + 1] in _INFO_TOPICS):
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def print_help(args: list[str]) -> int:
    """Every option of the harness and of the model named on the command line (else conf/config.yaml's
    default model), with its value, bound, what set it (a preset file, the command line or the
    default) and documentation."""
    from harness.interface.option_help import describe
    from harness.config.presets import compose_unchecked, source_of, sources

    overrides = overrides_of(args)
    try:
        name = next((o.split("=", 1)[1] for o in overrides if o.startswith("model=")), None)
        if name is None:
            name = str(compose_unchecked([]).model.name)  # what a bare run trains
        if registry.get(name).throughput_only and not any(o.startswith("mode=") for o in overrides):
            overrides.append("mode=throughput")  # the only mode such a model has
        cfg = compose(overrides)
    except ConfigError as err:
        print(f"harness.train: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    spec = registry.get(str(cfg.model.name))
    dataset = cfg.dataset.name if cfg.get("dataset") else None
    values: dict = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]  # the root is a mapping
    where = sources(overrides)
    print(module_doc(__name__).split("\n\n", 1)[1].rstrip())
    print("\n<- what set each value last: a preset file (`--info defaults` lists them in the order Hydra merges "
          "them), the command line, or the default of the options' dataclass.")
    print("\nOptions (key=value; harness/config/schema.py):")
    print(describe(HarnessConfig, {**values, "model": spec.name, "dataset": dataset},
                   source=lambda key: source_of(where, key)))
    print(f"\nmodel={spec.name} ({spec.summary}; model.<option>=...; dataset "
          f"{dataset or 'none: throughput-only'}):")
    print(describe(spec.options, values["model"], source=lambda key: source_of(where, f"model.{key}")))
    print(f"\nmodels: {', '.join(s.name for s in registry.models())}; datasets of {spec.name}: "
          f"{', '.join(datasets_for(spec.name)) or 'none'}; Hydra's own flags: --hydra-help")
    return EXIT_OK


def _host_checks(args: list[str], first: list[DictConfig]) -> Callable[[DictConfig], None]:
    """What this host must hold for each job: GPUs, writable folders, the dataset, run directories
    not taken. `first` gets the first job's config."""
    shows_only = any(a in ("--cfg", "-c", "--info", "-i") or a.startswith(("--cfg=", "--info=")) for a in args)
    hydra_overrides = [a for a in args if a.startswith("hydra.")]
    multirun = any(a in ("-m", "--multirun") for a in args)

    def checks(cfg: DictConfig) -> None:
        # torch (through the launcher) is imported only for a config that composed and passed its checks:
        # a mistyped option is refused in the time the config takes, not torch's import
        from harness import fastpath
        from harness.run.launch import check_resources, uses_cuda

        first.append(cfg)
        fastpath.resolve(cfg, uses_cuda(cfg))  # this config's one resolution; the job resolves its own
        check_resources(cfg)
        check_paths(cfg)
        if not shows_only:
            check_room(cfg)
            check_dataset(cfg)
            check_run_dirs(cfg, hydra_overrides, multirun)

    return checks


def check_dataset(cfg: DictConfig) -> None:
    """A real dataset (no generator in its config) must be where the config says before any run
    directory is made; an embedded one is generated by the run itself (into data_root), unless its
    folder holds what the generator did not write (the user's files: never replaced)."""
    spec = registry.get(str(cfg.model.name))
    if cfg.mode != "train" or spec.task is None or not cfg.get("dataset"):
        return
    if cfg.dataset.get("generator"):
        from harness.interface.generated import check_kept
        from harness.interface.generator_cli import check_config

        check_config(spec.task.generator, cfg.dataset.generator)  # counts that make no dataset (ConfigError)
        check_kept(str(cfg.dataset.path))  # names and sizes against the stamp (DataError, one line)
    else:
        spec.task.prepare(cfg)  # finds and checks it (DataError, one line), writes nothing


def main(argv: list[str] | None = None) -> int:
    # OpenMP reads its thread count and wait policy once, when torch starts it: nothing above has
    # imported torch yet (harness/run/threads.py)
    threads.apply_at_start()
    args = list(sys.argv[1:] if argv is None else argv)
    if "--help" in args or "-h" in args:
        return print_help(args)
    stop_on_sigterm()  # `timeout`, SLURM and `docker stop` end a run as Ctrl-C does
    # with a launcher that runs the jobs elsewhere (SLURM), this host's GPUs are not the jobs' GPUs
    remote = any(a.startswith("hydra/launcher=") and a != "hydra/launcher=basic" for a in args)
    multirun = any(a in ("-m", "--multirun") for a in args)
    shows_only = any(a in ("--cfg", "-c", "--info", "-i") or a.startswith(("--cfg=", "--info=")) for a in args)
    first: list[DictConfig] = []
    try:
        check_cli(overrides_of(args), check_run=(lambda cfg: first.append(cfg)) if remote else _host_checks(args, first))
        if not multirun and not shows_only and first:
            claim_run_dir(first[0])  # a run_id's directory: of two runs started with it, one gets it
    except (ConfigError, DataError) as err:
        print(f"harness.train: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    claimed = multirun and not shows_only and bool(first) and not any(a.startswith("hydra.sweep.dir=") for a in args)
    before = _missing_folders(Path(str(first[0].output_root)) / "sweeps") if claimed else []
    try:
        sweep_dir = _sweep_dir(args, first[0], remote) if multirun and not shows_only and first else None
    except ConfigError as err:  # the sweeps folder cannot be written
        print(f"harness.train: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if sweep_dir is not None and claimed:
        args.append(f"hydra.sweep.dir={sweep_dir}")
    try:
        records = _run_hydra(args)
    except SystemExit:
        # a launcher's own checks refused the request before any job (hydra/launcher=slurm on a host
        # without SLURM: one line, exit 2); Hydra claims the sweep folder before its launcher can check,
        # so the folders this call made for it go, if nothing was written there
        if sweep_dir is not None and claimed:
            _remove_empty([sweep_dir, *before])
        raise
    if isinstance(records, BaseException):
        print(f"harness.train: {stop_line(records)}", file=sys.stderr)
        return 128 + signal_number(records)
    # a sweep's runs may have run elsewhere (SLURM): its summary counts what did not finish
    if any(r.status == rec.FAILED for r in records) or (sweep_dir is not None and _unfinished(sweep_dir)):
        return EXIT_FAILED
    return EXIT_OK


def stop_line(err: KeyboardInterrupt) -> str:
    """What a stopped command says of its run: the record the run wrote as it ended (harness/run/job.py
    hands it on the signal's exception), or that no run was under way (Hydra making the run's folder, a
    sweep between runs) and so none was marked."""
    name = signal_name(err)
    what = "interrupted" if name == "SIGINT" else f"stopped by {name}{getattr(err, 'where', '')}"
    ended = getattr(err, "run_ended", None)
    if ended is not None:
        reason = f": {ended.reason}" if ended.reason else ""
        return f"{what} as the run ended; its result.json keeps its end ({ended.status}{reason})"
    if getattr(err, "record", None) is None:
        return f"{what} before a run began: no run was marked"
    return f"{what}; the run is marked aborted in its result.json"


def _run_hydra(args: list[str]) -> list[rec.RunRecord] | KeyboardInterrupt:
    """Hydra runs the job (or each job of a sweep); the records of the jobs this process ran."""
    import hydra

    from harness.run.job import run_job

    records: list[rec.RunRecord] = []

    @hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
    def _task(cfg: DictConfig) -> None:
        records.append(run_job(cfg))

    saved, sys.argv = sys.argv, [sys.argv[0], *args]
    try:
        _task()
    except KeyboardInterrupt as err:
        return err
    finally:
        sys.argv = saved
    return records


def _sweep_dir(args: list[str], cfg: DictConfig, remote: bool) -> Path:
    """The sweep's directory: hydra.sweep.dir when given, else one claimed now and named for what its
    jobs run (outputs.sweep_name), whose summary the sweep's end writes (harness/sweep.py's
    SweepSummary) and this command then reads."""
    given = next((a.split("=", 1)[1] for a in args if a.startswith("hydra.sweep.dir=")), None)
    if given:
        return Path(given)
    return claim_sweep_dir(str(cfg.output_root), sweep_name(cfg, overrides_of(args), device_of(cfg, remote)))


def _missing_folders(path: Path) -> list[Path]:
    """`path` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove each folder (deepest first) that is empty; one that holds anything stays, with its parents."""
    for folder in folders:
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty: what is there is kept, and so are the folders holding it
            return


def device_of(cfg: DictConfig, remote: bool) -> str:
    """cpu or cuda, as the jobs' ranks train (device=auto on this host), or the option as given where they
    run on other hosts (SLURM)."""
    if remote:
        return str(cfg.device)
    from harness.run.launch import uses_cuda

    return "cuda" if uses_cuda(cfg) else "cpu"


def _unfinished(sweep_dir: Path) -> int:
    """Runs and SLURM tasks of the sweep that did not finish, as its summary.json counts them; 1 where
    the summary could not be written to its end (a full disk: the sweep said so in one line)."""
    try:
        return int(json.loads((sweep_dir / "summary.json").read_text()).get("unfinished", 1))
    except (OSError, ValueError, AttributeError):
        return 1


if __name__ == "__main__":
    from harness.run.process_exit import before_exit

    status = main()
    before_exit()  # the run is over: the exit skips the collector's pass over torch's objects (1-3 s)
    sys.exit(status)
