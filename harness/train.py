"""Train a reference model to its quality target and record the run.

    python -m harness.train model=ncf seed=1                  one run, embedded data
    python -m harness.train model=ncf dataset=ml20m seed=1    real data, real-scale preset
    python -m harness.train -m model=ncf seed=range(1,6)      a sweep: one run directory per job
    python -m harness.train --cfg job                         print the composed config

Exit status: 0 when every run finished (reached its target or not: the status is in mlperf.log
and result.json), 1 when a run failed, 2 for a bad option, 130 when interrupted.
"""
from __future__ import annotations

import logging
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness import console, distributed, registry, seeding
from harness.config import CONF_DIR, ConfigError, check, check_cli
from harness.distributed import World
from harness.interface import DataError
from harness.interrupts import shielded
from harness.launch import RankFailed, check_resources, launch
from harness.precision import precision_name
from harness.results import record as rec

log = logging.getLogger("harness.train")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def run_job(cfg: DictConfig) -> rec.RunRecord:
    """One run in the run directory Hydra made for it; always leaves a result.json behind.
    Under torchrun or srun this is one rank of the run: only rank 0 writes the run's files."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    world = distributed.from_environment()
    main_rank = world is None or world.is_main
    if not main_rank:
        console.setup_rank_logging(world.rank, run_dir)
    record = rec.RunRecord(
        run_dir=str(run_dir),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=list(HydraConfig.get().overrides.task),
        versions=rec.versions(),
    )
    try:
        try:
            _run(cfg, run_dir, record, world)
        except KeyboardInterrupt:
            record.status, record.reason = rec.ABORTED, "interrupted (Ctrl-C)"
            raise
        except RankFailed as err:
            record.status, record.reason = rec.FAILED, str(err)
            record.error = {"type": "RankFailed", "message": str(err), "rank": err.rank,
                            "traceback": err.child_traceback}
            log.error("run failed on rank %d:\n%s", err.rank, err.child_traceback or str(err))
        except (ConfigError, DataError) as err:
            record.status, record.reason = rec.FAILED, str(err)
            record.error = {"type": type(err).__name__, "message": str(err), "rank": 0, "traceback": None}
        except Exception as err:  # a crash: the result names it, train.log keeps the traceback
            record.status = rec.FAILED
            record.reason = f"{type(err).__name__}: {err}".splitlines()[0]
            record.error = {
                "type": type(err).__name__, "message": str(err), "rank": 0,
                "traceback": traceback.format_exc(),
            }
            log.error("run failed:\n%s", record.error["traceback"])
    finally:
        record.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if main_rank:
            with shielded():  # a second Ctrl-C must not leave a half-written result.json
                rec.write(record, run_dir / "result.json")
            _summarise(record)
    return record


def _run(cfg: DictConfig, run_dir: Path, record: rec.RunRecord, world: Optional[World]) -> None:
    check(cfg)
    spec = registry.get(cfg.model.name)
    if cfg.seed is None:
        cfg.seed = seeding.draw_seed()
    record.model, record.benchmark, record.dataset = spec.name, spec.benchmark, cfg.dataset.name
    record.quality_metric, record.target, record.seed = spec.quality_metric, cfg.model.target, cfg.seed
    record.precision, record.throughput_unit = precision_name(cfg), f"{spec.sample_unit}/s"
    if world is None or world.is_main:
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    log.info("%s on %s, seed %d -> %s", spec.name, cfg.dataset.name, cfg.seed, run_dir)
    record.mode, record.warmup_steps = str(cfg.mode), cfg.warmup_steps
    data_dir = None if cfg.mode == "throughput" else spec.prepare(cfg)  # synthetic batches need no data
    launch(cfg, spec.name, run_dir, data_dir, record, world)


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
    quality = f"{r.quality_metric} {r.final_quality:.4f}" if r.final_quality is not None else "no evaluation"
    ttt = f"{r.time_to_train_s:.1f} s ({r.time_to_train_min:.2f} min)" if r.time_to_train_s is not None else "n/a"
    epochs = f"{r.epochs_to_converge} epochs to converge" if r.epochs_to_converge else f"{r.epochs_run} epochs"
    tput = f"{r.throughput:,.0f} {r.throughput_unit}" if r.throughput else "throughput n/a"
    line = f"{r.status.upper()}: {quality} (target {r.target}), time to train {ttt}, {epochs}, {tput}"
    if r.reason:
        line += f" [{r.reason}]"
    log.info(line)
    if r.overhead_s is not None:
        log.info("harness overhead: %.2f s, %.2f%% of time to train (outside training steps and evaluation)",
                 r.overhead_s, 100 * r.overhead_fraction)
    log.info("run dir: %s", r.run_dir)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # with a launcher that runs the jobs elsewhere (SLURM), this host's GPUs are not the jobs' GPUs
    remote = any(a.startswith("hydra/launcher=") and a != "hydra/launcher=basic" for a in args)
    try:
        check_cli(args, check_run=None if remote else check_resources)
    except ConfigError as err:
        print(f"harness.train: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    records: list[rec.RunRecord] = []

    @hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
    def _task(cfg: DictConfig) -> None:
        records.append(run_job(cfg))

    sys.argv = [sys.argv[0], *args]
    try:
        _task()
    except KeyboardInterrupt:
        print("harness.train: interrupted; the run is marked aborted in its result.json", file=sys.stderr)
        return EXIT_INTERRUPTED
    if any(r.status == rec.FAILED for r in records):
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
