"""The GPU benchmark suite in one command: models x precisions x GPU counts, one table.

    python -m harness.bench                                   # the whole suite, tf32 and amp, 1..all GPUs
    python -m harness.bench --precisions fp32 tf32 amp        # IEEE fp32 too
    python -m harness.bench --models bert_large txl_large --precisions amp --gpus 1 2 --out outputs/bench/h200
    python -m harness.bench --models bert_large:pretrain512 --set model.batch_size=16
    python -m harness.bench --out outputs/bench/h200 --budget-min 9 --resume   # continue a cut-short matrix
    python -m harness.bench --tables-only --out outputs/bench/h200            # rebuild the tables
    python -m harness.bench --smoke                           # each suite model once: debug preset, fp32, 1 CPU rank

Each cell is its own process, `python -m harness.train model=... mode=throughput precision=... gpus=...`
(a CPU cell of one rank: a fork of one process that loaded torch and the harness once, harness/bench/start.py)
at the model's real-scale preset (a time-to-train model with its real dataset's config; no data is
read) and --seed: a warm-up of --warmup-s seconds left out, then --repeats windows of as many steps
as --window-s holds at the step time the warm-up measured (the same command run by hand measures
windows of the same seconds); its result.json lands in OUT/runs/<cell>/. The default precisions are
tf32 and amp (fp32 on a CPU): the "FP32" of the studies the suite reproduces is TF32
(docs/gpu_suite.md); --precisions fp32 adds IEEE fp32.
A cell that fails is recorded as failed (a result.json with the reason), one a signal ended before it
wrote its own as aborted (harness/bench/ended.py), and the matrix goes on.
OUT/bench.jsonl gets one line per cell; results.md, throughput.csv, scaling.csv, precision.csv,
fast_path.csv, the charts and results.html (all of them as one page) are rebuilt from every run
under OUT (harness/results/report/bench_tables.py). Exit status: 0 when
every cell succeeded, 1 when any failed, 2 for a bad option, 3 when the budget stopped the matrix,
130 when interrupted (Ctrl-C ends the running cells' processes).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional, Sequence

from harness.interface.option_help import module_doc
from harness import files, registry
from harness import record as rec
from harness.bench import ended, readback, start
from harness.bench.suite import Cell, announce, check_overrides, estimate_s, plan, suite_models, usage_error
from harness.errors import ConfigError
from harness.observe.progress import figure
from harness.fastpath import Precision
from harness.results.report import bench_tables
from harness.run import record_file
from harness.results.analysis.throughput import read_runs

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass
class Outcome:
    cell: str
    model: str
    workload: Optional[str]
    precision: str
    gpus: int
    status: str
    throughput: Optional[float]
    unit: str
    windows: list[float]
    seconds: float
    reason: Optional[str]
    run_dir: str
    command: str


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.bench", description=module_doc(__name__).splitlines()[0])
    p.add_argument("--models", nargs="+", help="model or model:workload (default: the whole suite, every model "
                   f"whose ModelSpec has a suite entry: {', '.join(suite_models())})")
    p.add_argument("--precisions", nargs="+", choices=[c.value for c in Precision],
                   help="default: tf32 and amp (the published studies' \"FP32\" is TF32), fp32 with --device cpu; "
                   "fp32 is IEEE fp32")
    p.add_argument("--paths", nargs="+", choices=["fast", "eager"], default=["fast"],
                   help="fast: each model's measured fast path on CUDA (torch.compile, CUDA graphs: the default); "
                   "eager: the plain eager step published eager tables measure; both: side by side, with a fast / "
                   "eager table")
    p.add_argument("--eager", action="store_true", help="the eager step alone: --paths eager")
    p.add_argument("--gpus", nargs="+", type=int, help="GPU counts (default: 1 and each power of two up to all)")
    p.add_argument("--repeats", type=int, default=3, help="measured windows per cell")
    p.add_argument("--window-s", type=float, default=3.0, help="aimed length of a window, seconds")
    p.add_argument("--warmup-s", type=float, default=3.0, help="aimed length of the warm-up, seconds")
    p.add_argument("--seed", type=int, default=1, help="every cell's seed: one synthetic batch for all cells")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides for every cell")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one cell may take")
    p.add_argument("--budget-min", type=float, help="start no cell that would end after this many minutes")
    p.add_argument("--resume", action="store_true", help="keep the cells OUT already holds a success for")
    p.add_argument("--tables-only", action="store_true", help="run nothing; rebuild the tables from OUT")
    p.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda when PyTorch sees a GPU")
    p.add_argument("--jobs", type=int, help="cells run at once, each on GPUs of its own (default 1; --smoke: 2)")
    p.add_argument("--smoke", action="store_true", help="a check that each cell's model runs, not the matrix: each "
                   "suite model (or --models) once at its debug preset, fp32 on one CPU rank, 2 steps")
    p.add_argument("--out", help="output folder (default: outputs/bench/<date>_<time>; with --smoke, "
                   "outputs/bench/smoke_<date>_<time>)")
    return p


def machine() -> dict:
    from harness.observe.system import cpu_model, nvml_driver, torch_files

    found = torch_files()  # a host where torch can see no GPU: its versions, without starting torch
    gpus, name, driver, cudnn = 0, "CPU", None, None
    if found is None:
        import torch

        found = {"torch": torch.__version__, "cuda": torch.version.cuda}
        if torch.cuda.is_available():
            gpus, driver, cudnn = torch.cuda.device_count(), nvml_driver(), torch.backends.cudnn.version()
            name = torch.cuda.get_device_name(0) if gpus else "CPU"
    return {"machine": f"{gpus}x {name}" if gpus else "CPU", "accelerator": name, "gpu_count": gpus,
            "driver": driver, **found, "cudnn": cudnn, "python": platform.python_version(),
            "host": platform.node(), "cpu": cpu_model(), "date": datetime.datetime.now().isoformat(timespec="seconds")}


def run_cell(cell: Cell, args: argparse.Namespace, out: Path, device: str, gpus: Sequence[int] = ()) -> Outcome:
    run_dir = out / "runs" / cell.name
    overrides = cell.overrides(device, smoke=args.smoke, window_s=args.window_s, warmup_s=args.warmup_s,
                               repeats=args.repeats, seed=args.seed) + list(args.set)
    shown = "python -m harness.train " + " ".join(shlex.quote(o) for o in overrides)
    argv = [*overrides, f"output_root={run_dir}", f"hydra.run.dir={run_dir}"]
    t0 = time.perf_counter()
    run_dir.mkdir(parents=True, exist_ok=True)
    result_path = run_dir / "result.json"
    result_path.unlink(missing_ok=True)  # an earlier attempt's, under --resume
    reason, timed_out = None, False
    starter = getattr(args, "starter", None) if cell.gpus == 1 else None
    proc = start.start(argv, run_dir / "bench.log", start.cell_env(device, gpus), starter)
    RUNNING.add(proc)
    try:
        reason = ended.reason(proc.wait(timeout=args.timeout), run_dir / "bench.log")
    except subprocess.TimeoutExpired:
        stop(proc)
        reason, timed_out = f"no result within {args.timeout:.0f} s (--timeout)", True
    finally:
        RUNNING.discard(proc)
    ended.drop_reserve(run_dir)  # the run's own, left by a process killed before its end
    seconds = time.perf_counter() - t0
    if not result_path.is_file():  # the run never got to write its own: aborted by a signal, else failed
        killed = not timed_out and ended.signal_of(proc.returncode) is not None
        record_file.write(rec.RunRecord(status=rec.ABORTED if killed else rec.FAILED, mode="throughput",
                                model=cell.model, benchmark=cell.model, world_size=cell.gpus, precision=cell.precision,
                                run_dir=str(run_dir), accelerator=args.accelerator, platform=f"{cell.gpus}x{args.accelerator}",
                                reason=reason or "no result.json written", command=tuple(overrides),
                                hyperparameters={"workload": cell.workload} if cell.workload else {},
                                started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")),
                  result_path)
    r = rec.load(result_path)
    if timed_out:  # the run recorded its own end (interrupted): the table should say why
        r = replace(r, reason=reason)
        record_file.write(r, result_path)
    windows = [e.throughput for e in r.epochs if e.throughput]
    workload = r.hyperparameters.get("workload", cell.workload)
    return Outcome(cell.name, cell.model, workload, r.precision or cell.precision, cell.gpus, r.status,
                   r.throughput, r.throughput_unit, windows, round(seconds, 1),
                   r.reason or (reason if r.status != rec.SUCCESS else None), str(run_dir), shown)


RUNNING: set[start.CellProcess] = set()  # the cells' launchers now running


def stop(proc: start.CellProcess) -> None:
    """End a cell's process session: SIGTERM (the harness marks the run aborted), then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=grace)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def _done(out: Path, cell: Cell, args: argparse.Namespace, device: str) -> bool:
    """--resume keeps a cell measured as it would be measured now."""
    planned = cell.overrides(device, smoke=args.smoke, window_s=args.window_s, warmup_s=args.warmup_s,
                             repeats=args.repeats, seed=args.seed) + list(args.set)
    return readback.succeeded(out / "runs" / cell.name / "result.json", planned)


def _say(text: str) -> None:
    print(text, flush=True)


def main(argv: Optional[list[str]] = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # while planning or tabulating: the matrix itself ends its cells first
        print("harness.bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Optional[list[str]]) -> int:
    registry.publish()  # the report tables read the models' categories through it
    args = _parser().parse_args(argv)
    out = Path(args.out or f"outputs/bench/{'smoke_' if args.smoke else ''}"
               f"{datetime.datetime.now():%Y-%m-%d_%H-%M-%S}").resolve()
    problem = usage_error(args, out)
    if problem:
        print(f"harness.bench: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    # the tables name the machine that ran the cells, which --tables-only may not be
    saved = readback.saved_machine(out) if args.tables_only else {}
    meta = saved or machine()
    if not args.tables_only:
        meta["command"] = "python -m harness.bench " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    device = "cpu" if args.smoke else args.device or ("cuda" if meta.get("gpu_count") else "cpu")
    if not args.tables_only:  # what the tables say ran the cells: a smoke run's banner, no GPU facts for a CPU
        meta.update(device=meta.get("accelerator") if device == "cuda" else "CPU", smoke=args.smoke)
    args.jobs = args.jobs or (min(2, os.cpu_count() or 1) if args.smoke else 1)
    try:
        cells = [] if args.tables_only else plan(args, meta["gpu_count"], device)
        check_overrides(cells, device, args)  # a bad --set is one usage error, not every cell failing
    except ConfigError as err:
        print(f"harness.bench: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    out.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cells if not (args.resume and _done(out, c, args, device))]
    est = [estimate_s(c, device, args.smoke, args.window_s, args.warmup_s, args.repeats) for c in todo]
    for line in announce(cells, todo, est, out, args, device, meta):  # on a CPU at full size: no estimate
        _say(line)
    args.accelerator = meta.get("accelerator", "?") if device == "cuda" else "CPU"
    # CPU cells of one rank start as forks of one process that loaded torch once (harness/bench/start.py)
    args.starter = start.Starter(start.cell_env(device)) if device == "cpu" and any(
        c.gpus == 1 for c in todo) else None
    try:
        outcomes, stopped, t0 = _run_all(todo, est, args, out, device, meta.get("gpu_count") or 0)
    except KeyboardInterrupt:
        for proc in list(RUNNING):
            stop(proc)
        print("harness.bench: interrupted; the cells run so far are in " + str(out), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if args.starter is not None:
            args.starter.close()
    if todo and not stopped:
        _say(f"matrix done in {(time.perf_counter() - t0) / 60:.1f} min")
    try:
        return _tables(args, out, meta, outcomes, stopped)
    except OSError as err:  # a full disk: each table is whole or not there
        print(f"harness.bench: error: {err}", file=sys.stderr)
        return EXIT_FAILED


def _tables(args: argparse.Namespace, out: Path, meta: dict, outcomes: list[Outcome], stopped: int) -> int:
    """bench.json and the tables from every run under OUT; the exit status."""
    if not args.tables_only:
        files.write_atomic(out / "bench.json", json.dumps({**meta, "cells": [asdict(o) for o in outcomes]}, indent=1) + "\n")
    readback.damaged_results(out)
    runs = read_runs([out / "runs"]) if (out / "runs").is_dir() else []
    meta.update(cells_run=len(runs), cells_failed=sum(r.status != "success" for r in runs),
                minutes=readback.seconds(readback.cell_lines(out / "bench.jsonl")) / 60)
    for path in bench_tables.summarise(runs, meta, out, order=suite_models()):
        _say(f"wrote {path}")
    if stopped:
        _say(f"budget reached: {stopped} cell(s) not started; run the same command with --resume to continue")
        return EXIT_BUDGET
    return EXIT_FAILED if any(r.status != "success" for r in runs) else EXIT_OK


def _run_all(todo: list[Cell], est: list[float], args, out: Path, device: str,
             gpu_count: int) -> tuple[list[Outcome], int, float]:
    """Run the cells, up to --jobs at a time, each GPU cell on GPUs of its own (CUDA_VISIBLE_DEVICES),
    logging each with the ETA; start no cell once --budget-min would be passed. Returns (outcomes,
    cells not started, start time)."""
    t0, jobs = time.perf_counter(), max(args.jobs, 1)
    budget = args.budget_min * 60 if args.budget_min else math.inf
    free = list(range(gpu_count)) if device == "cuda" else []
    running: dict[Future, tuple[float, list[int]]] = {}  # future -> (estimate, GPUs it holds)
    outcomes: list[Outcome] = []
    progress = {"done_s": 0.0, "left_s": sum(est)}

    def collect(until: str) -> None:
        """Wait for the first running cell to end (FIRST_COMPLETED) or for all (ALL_COMPLETED)."""
        if not running:
            return
        done, _ = wait(running, return_when=until)
        for f in done:
            guess, held = running.pop(f)
            free.extend(held)
            progress["done_s"] += guess
            progress["left_s"] -= guess
            outcomes.append(_report(f.result(), len(outcomes) + 1, len(todo), t0, progress, out, jobs))

    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for i, (cell, guess) in enumerate(zip(todo, est)):
            if time.perf_counter() - t0 + guess > budget:
                collect(ALL_COMPLETED)
                return outcomes, len(todo) - i, t0
            while running and (len(running) >= jobs or (device == "cuda" and len(free) < cell.gpus)):
                collect(FIRST_COMPLETED)
            held = [free.pop(0) for _ in range(cell.gpus)] if device == "cuda" else []
            running[pool.submit(run_cell, cell, args, out, device, held)] = (guess, held)
        collect(ALL_COMPLETED)
    except KeyboardInterrupt:
        # the cells' processes first: each pool thread waits on its cell, and a pool left by `with` would wait
        # for every running cell to finish its windows before Ctrl-C could stop it
        for proc in list(RUNNING):
            stop(proc)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return outcomes, 0, t0


def _report(o: Outcome, n: int, total: int, t0: float, progress: dict, out: Path, jobs: int) -> Outcome:
    lines = files.RecordFile(out / "bench.jsonl", exclusive=False)  # one whole line per cell, or none
    try:
        lines.write_line(json.dumps(asdict(o)))
    finally:
        lines.close()
    elapsed = time.perf_counter() - t0
    # the estimates of the cells left, scaled by how the finished ones compared with theirs
    eta = elapsed / max(progress["done_s"], 1e-9) * progress["left_s"]
    what = (f"{figure(o.throughput)} {o.unit} (windows {figure(min(o.windows))}-{figure(max(o.windows))})"
            if o.status == "success" and o.throughput and o.windows else f"FAILED: {o.reason}")
    _say(f"[{n}/{total}] {o.cell}: {what}, {o.seconds:.0f} s; elapsed {elapsed / 60:.1f} min, ETA {eta / 60:.1f} min")
    return o

