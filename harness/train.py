"""Train a reference model to its quality target and record the run.

    python -m harness.train model=ncf seed=1                  one run, embedded data
    python -m harness.train model=ncf dataset=ml20m seed=1    real data, real-scale preset
    python -m harness.train -m model=ncf 'seed=range(1,6)'    a sweep: one run directory per job
    python -m harness.train --cfg job                         print the composed config
    python -m harness.train --help model=gnmt                 every option, documented

Exit status: 0 when every run finished (reached its target or not: the status is in mlperf.log
and result.json), 1 when a run failed, 2 for a bad option, 130 when interrupted by Ctrl-C, 143 when
stopped by SIGTERM (128 + the signal's number).
"""
from __future__ import annotations

import logging
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

# OpenMP reads its thread count and wait policy once, when torch starts it: choose them before
# anything below imports torch (harness/run/threads.py; stdlib only).
from harness.run import threads

threads.apply_at_start(__name__)

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness import registry, sweep
from harness.config import CONF_DIR, HarnessConfig, check, check_cli, compose, datasets_for
from harness.errors import ConfigError
from harness.interface import DataError
from harness.observe import console, host_load
from harness.outputs import check_paths, check_run_dirs
from harness.results import record as rec
from harness.run import distributed, seeding
from harness.run.distributed import World
from harness.run.interrupts import shielded, signal_name, signal_number, stop_on_sigterm
from harness.run.launch import RankFailed, check_resources, launch
from harness.run.precision import precision_name

log = logging.getLogger("harness.train")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_job(cfg: DictConfig) -> rec.RunRecord:
    """One run in the run directory Hydra made for it; always leaves a result.json behind.
    Under torchrun or srun this is one rank of the run: only rank 0 writes the run's files."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    world = distributed.from_environment()
    main_rank = world is None or world.is_main
    if not main_rank:
        console.setup_rank_logging(world.rank, run_dir)
    facts = {"run_dir": str(run_dir), "started_at": _now(), "command": list(HydraConfig.get().overrides.task),
             "versions": rec.versions(), "mode": str(cfg.mode), "warmup_steps": cfg.warmup_steps,
             "world_size": cfg.gpus * cfg.nodes if world is None else world.world_size,
             "threads": threads.current().record()}
    monitor, start = _watch_host(world) if main_rank else (None, None)
    rank0: Optional[dict] = None
    failure: Optional[dict] = None
    try:
        try:
            rank0 = _run(cfg, run_dir, facts, world, start)
        except KeyboardInterrupt as err:
            failure = {"status": rec.ABORTED, "reason": _interrupted(err, run_dir / "mlperf.log" if cfg.mode == "train"
                                                                      else None)}
            raise
        except RankFailed as err:
            failure = {"reason": str(err), "error": {"type": "RankFailed", "message": str(err), "rank": err.rank,
                                                     "traceback": err.child_traceback}}
            if err.child_traceback:  # the console gets the one-line cause at the end; train.log all of it
                log.error("rank %d's traceback:\n%s", err.rank, err.child_traceback, extra=console.FILE_ONLY)
        except (ConfigError, DataError) as err:
            failure = {"reason": str(err), "error": {"type": type(err).__name__, "message": str(err), "rank": 0,
                                                     "traceback": None}}
        except Exception as err:  # a crash: the result names it, train.log keeps the traceback
            failure = {"reason": f"{type(err).__name__}: {err}".splitlines()[0],
                       "error": {"type": type(err).__name__, "message": str(err), "rank": 0,
                                 "traceback": traceback.format_exc()}}
            log.error("run failed:\n%s", failure["error"]["traceback"], extra=console.FILE_ONLY)
    finally:
        facts["finished_at"] = _now()
        if monitor is not None:
            facts["host_load"] = _host_load_during(monitor, start, run_dir / "mlperf.log")
        record = rec.assemble(facts, rank0, failure, run_dir / "mlperf.log" if main_rank else None)
        if world is None and cfg.nodes > 1 and rank0 is None and failure is None:
            log.info("run dir: %s (rank 0 ran on another node, whose launcher writes result.json)", run_dir)
        elif main_rank:
            with shielded():  # a second Ctrl-C must not leave a half-written result.json
                rec.write(record, run_dir / "result.json")
            _summarise(record)
    return record


def _watch_host(world: Optional[World]) -> tuple[host_load.HostLoadMonitor, dict]:
    """How busy the machine is now (the run's own processes left out), and a monitor for the rest
    of the run; a busy machine is said on the console, since time to train then measures it too."""
    root = host_load.run_root("single" if world is None else world.source)
    start = host_load.summary(host_load.measure(root), None, host_load.load_average())
    if start["busy"]:
        log.warning("warning: the machine is busy: %s", start["note"])
    return host_load.HostLoadMonitor(root).start(), start


def _host_load_during(monitor: host_load.HostLoadMonitor, start: dict, log_path: Path) -> dict:
    monitor.stop()
    t0 = t1 = None
    if log_path.is_file():  # the timed region as the log has it; a throughput run: all of it
        from harness.results.parse import LogError, parse_file

        try:
            summary = parse_file(log_path)
            t0, t1 = (None if t is None else t / 1000 for t in (summary.run_start_ms, summary.run_stop_ms))
        except LogError:
            pass
    during = host_load.summary(start["other_cpu_pct_start"], monitor.mean(t0, t1), start["load_avg_start"],
                               start["cpus"])
    if during["busy"] and not start["busy"]:
        log.warning("warning: the machine got busy during the run: %s", during["note"])
    return during


def _interrupted(err: KeyboardInterrupt, log_path: Optional[Path]) -> str:
    """result.json's reason: the signal, where it went, and whether a training run's timed region
    had begun (a throughput measurement has no MLPerf log)."""
    reason = f"interrupted ({signal_name(err)}{getattr(err, 'where', '')})"
    started = log_path is None or (log_path.is_file() and '"key": "run_start"' in log_path.read_text(errors="replace"))
    return reason if started else reason + " before run_start: no time to train"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _run(cfg: DictConfig, run_dir: Path, facts: dict, world: Optional[World],
         host: Optional[dict]) -> Optional[dict]:
    check(cfg)
    spec = registry.get(cfg.model.name)
    if cfg.seed is None:
        cfg.seed = seeding.draw_seed()
    facts.update(model=spec.name, benchmark=spec.benchmark, seed=cfg.seed, precision=precision_name(cfg),
                 throughput_unit=f"{spec.sample_unit}/s", dataset=cfg.dataset.name if cfg.get("dataset") else "")
    if spec.task is not None:
        target = cfg.model.target
        facts.update(quality_metric=spec.task.quality.name, quality_direction=spec.task.quality.direction,
                     target=OmegaConf.to_object(target) if OmegaConf.is_config(target) else target,
                     epoch_unit="samples" if cfg.model.get("eval_every_samples") else "epochs")
    if world is None or world.is_main:
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    log.info("%s on %s, seed %d -> %s", spec.name, facts["dataset"] or "synthetic batches", cfg.seed, run_dir)
    # synthetic batches need no data
    data_dir = None if cfg.mode == "throughput" or spec.task is None else spec.task.prepare(cfg)
    return launch(cfg, run_dir, data_dir, world, host)


def _summarise(r: rec.RunRecord) -> None:
    if r.status == rec.FAILED:
        log.error("error: %s", r.reason)
        log.info("run dir: %s", r.run_dir)
        return
    if r.mode == "throughput":
        tput = f"{r.throughput:,.0f} {r.throughput_unit}" if r.throughput else "n/a"
        log.info("THROUGHPUT: %s (%s warm-up steps left out), %s, %s, global batch %s",
                 tput, r.warmup_steps, r.platform, r.precision, r.global_batch_size)
        log.info("run dir: %s", r.run_dir)
        return
    spec = registry.get(r.model) if r.model else None
    quality = (spec.task.quality.describe(r.final_quality) if r.final_quality is not None and spec and spec.task
               else "no evaluation")
    ttt = f"{r.time_to_train_s:.1f} s ({r.time_to_train_min:.2f} min)" if r.time_to_train_s is not None else "n/a"
    if r.epochs_to_converge is not None:
        epochs = f"{r.epochs_to_converge:,g} {r.epoch_unit} to converge"
    else:
        epochs = f"{r.epochs_run} epochs"
    tput = f"{r.throughput:,.0f} {r.throughput_unit}" if r.throughput else "throughput n/a"
    target = spec.task.quality.describe_target(r.target) if spec and spec.task and r.target is not None else r.target
    line = f"{r.status.upper()}: {quality} (target {target}), time to train {ttt}, {epochs}, {tput}"
    if r.reason:
        line += f" [{r.reason}]"
    log.info(line)
    if r.host_load and r.host_load.get("busy"):
        log.warning("warning: %s", r.host_load["note"])
    if r.overhead_s is not None:
        log.info("harness overhead: %.2f s, %.2f%% of time to train (outside training steps and evaluation)",
                 r.overhead_s, 100 * r.overhead_fraction)
    log.info("run dir: %s", r.run_dir)


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
    default model), with its value, bound and documentation."""
    from harness.config import compose_unchecked
    from harness.interface.options import describe

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
    print(__doc__.split("\n\n")[1].rstrip())
    print("\nOptions (key=value; harness/config.py):")
    print(describe(HarnessConfig, {**values, "model": spec.name, "dataset": dataset}))
    print(f"\nmodel={spec.name} ({spec.summary}; model.<option>=...; dataset "
          f"{dataset or 'none: throughput-only'}):")
    print(describe(spec.options, values["model"]))
    print(f"\nmodels: {', '.join(s.name for s in registry.MODELS)}; datasets of {spec.name}: "
          f"{', '.join(datasets_for(spec.name)) or 'none'}; Hydra's own flags: --hydra-help")
    return EXIT_OK


def _host_checks(args: list[str]):
    """What this host must hold for each job: GPUs, writable folders, run directories not taken."""
    shows_only = any(a in ("--cfg", "-c", "--info", "-i") or a.startswith(("--cfg=", "--info=")) for a in args)
    hydra_overrides = [a for a in args if a.startswith("hydra.")]
    multirun = any(a in ("-m", "--multirun") for a in args)

    def checks(cfg: DictConfig) -> None:
        check_resources(cfg)
        check_paths(cfg)
        if not shows_only:
            check_run_dirs(cfg, hydra_overrides, multirun)

    return checks


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--help" in args or "-h" in args:
        return print_help(args)
    stop_on_sigterm()  # `timeout`, SLURM and `docker stop` end a run as Ctrl-C does
    # with a launcher that runs the jobs elsewhere (SLURM), this host's GPUs are not the jobs' GPUs
    remote = any(a.startswith("hydra/launcher=") and a != "hydra/launcher=basic" for a in args)
    try:
        check_cli(overrides_of(args), check_run=None if remote else _host_checks(args))
    except ConfigError as err:
        print(f"harness.train: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    records: list[rec.RunRecord] = []

    @hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
    def _task(cfg: DictConfig) -> None:
        records.append(run_job(cfg))

    sys.argv = [sys.argv[0], *args]
    sweep.unfinished_in_last_sweep = 0
    try:
        _task()
    except KeyboardInterrupt as err:
        name = signal_name(err)
        what = "interrupted" if name == "SIGINT" else f"stopped by {name}{getattr(err, 'where', '')}"
        print(f"harness.train: {what}; the run is marked aborted in its result.json", file=sys.stderr)
        return 128 + signal_number(err)
    # a sweep's runs may have run elsewhere (SLURM): its summary counts what did not finish
    if any(r.status == rec.FAILED for r in records) or sweep.unfinished_in_last_sweep:
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
