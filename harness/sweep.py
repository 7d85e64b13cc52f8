"""Seed sweeps: runs of one config with seeds drawn from the OS, and the summary a sweep writes when it ends.

    python -m harness.sweep model=ncf                          # MLPerf's required count of drawn seeds (10 for NCF)
    python -m harness.sweep model=gnmt runs=5 gpus=1,2         # 5 drawn seeds, each at 1 and at 2 GPUs
    python -m harness.sweep model=ncf runs=5 device=cpu precision=fp32,bf16
    python -m harness.report outputs/sweeps/<sweep>            # the sweep's table, scores and intervals again
    python -m harness.report SWEEP_A SWEEP_B --compare         # one sweep against another

Options: runs=N, the seeds to draw (default: MLPerf's required count for the model's benchmark, 5 where MLPerf
names none); every other key=value is harness.train's (python -m harness.train --help model=<name> lists
them with their values), and a comma list (gpus=1,2) runs each drawn seed at each value. The sweep draws
the seeds: seed= and -m are refused.

MLPerf's closed division wants seeds drawn, not hand-picked: the sweep draws them from the OS, writes them
to seeds.txt in its directory before anything runs, and starts the Hydra multirun `python -m harness.train
-m seed=S1,S2,... <your overrides>`. Its directory, outputs/sweeps/<date>_<time>_<what>_<n>seeds/, is named
for what it runs (model, ranks x device, precision: ncf_1xcpu_fp32_5seeds), and holds one directory per
run. Any multirun (this one or one typed by hand) ends with SweepSummary writing summary.md, summary.json,
summary.csv and plots/ into its sweep directory; `python -m harness.report SWEEP_DIR --md ... --plots ...`
rebuilds the same at any time. Each run is measured as `python -m harness.train` measures it: the same
CPU thread policy (harness/run/threads.py) and the same step.

Exit status: as harness.train's: 0 when every run finished (reached its target or not), 1 when a run failed
or did not finish, 2 for a bad option or a missing dataset (nothing is run), 130 on Ctrl-C, 143 on SIGTERM.
summary.json's `unfinished` counts the runs and SLURM tasks that did not finish: harness.train's exit
status reads it (under SLURM the runs end in other processes).
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Optional

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.interface.option_help import module_doc
from harness.errors import ConfigError
from harness import files
from harness.run import threads

log = logging.getLogger("harness.sweep")


# Written by the SLURM launcher (harness/run/slurm.py): how each array task of the sweep ended.
SLURM_TASKS = "slurm_tasks.json"


class SweepSummary(Callback):
    """Hydra callback (conf/config.yaml: hydra.callbacks.sweep_summary): report the whole sweep at its end."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            summarise(sweep_dir)
        except OSError as err:  # a full disk: each file is whole; summary.json lacks `unfinished`: exit 1
            print(f"sweep: error: {err}; the runs are in {sweep_dir} (python -m harness.report {sweep_dir} "
                  "rebuilds the summary)", file=sys.stderr)


def summarise(sweep_dir: Path) -> None:
    """summary.md, .json, .csv and plots/ of the sweep's runs, the SLURM tasks' ends, and the line that
    counts them; summary.json's `unfinished` is written last."""
    from harness.report import build, render_text, write_outputs

    report = build([str(sweep_dir)])
    written = write_outputs(report, md=str(sweep_dir / "summary.md"), json_out=str(sweep_dir / "summary.json"),
                            csv_out=str(sweep_dir / "summary.csv"), plots=str(sweep_dir / "plots"))
    failed = failed_runs(sweep_dir, [Path(r.path).parent for r in report.runs if r.status in ("failed", "incomplete")])
    tasks = slurm_tasks(sweep_dir)
    print(render_text(report), end="")
    line = (f"sweep: {len(report.runs)} run(s), {sum(r.converged for r in report.runs)} converged, "
            f"{len(failed)} failed")
    unfinished = len(failed)
    if tasks is not None:
        stopped = [t for t in tasks if t["state"] != "COMPLETED" or not t["ran"] or t["stopped_by"]]
        unfinished += sum(1 for t in stopped if not _run_failed(t, failed))
        line += f"; SLURM: {len(tasks)} task(s), {len(tasks) - len(stopped)} ran to their end"
        for t in stopped:
            after = f" after {t['stopped_by']}" if t["stopped_by"] else ""
            line += f"; task {t['job_id']} {t['state']}{after}: {t['note'] or 'no note'}"
        _add_tasks(sweep_dir, tasks)
    _add_to_summary(sweep_dir, unfinished=unfinished)
    print(f"{line}; summary in {sweep_dir}/summary.md and {len(written) - 3} plot(s)")


def failed_runs(sweep_dir: Path, unfinished: list[Path]) -> set[Path]:
    """The run directories of runs that failed: those the report finds unfinished, and those whose
    result.json says failed (a loss that turned NaN, a crash: MLPerf's log calls them aborted)."""
    failed = set(unfinished)
    for path in sweep_dir.rglob("result.json"):
        try:
            if json.loads(path.read_text()).get("status") == "failed":
                failed.add(path.parent)
        except (OSError, ValueError, AttributeError):
            failed.add(path.parent)  # unreadable: not a finished run
    return failed


def slurm_tasks(sweep_dir: Path) -> Optional[list[dict]]:
    """The SLURM launcher's record of the sweep's tasks, or None for a sweep that did not use it."""
    path = sweep_dir / SLURM_TASKS
    return json.loads(path.read_text()) if path.is_file() else None


def _run_failed(task: dict, failed: set[Path]) -> bool:
    """The task's run is already counted among the failed runs."""
    return task["run_dir"] is not None and Path(task["run_dir"]) in failed


def _add_tasks(sweep_dir: Path, tasks: list[dict]) -> None:
    """summary.md and summary.json gain the tasks: a task that never ran has no run to show."""
    rows = ["", "## SLURM tasks", "", "| task | overrides | state | ran | note |", "|---|---|---|---|---|"]
    rows += [f"| {t['job_id']} | {' '.join(t['overrides'])} | {t['state']} | {'yes' if t['ran'] else 'no'} | "
             f"{t['note']} |" for t in tasks]
    summary_md = sweep_dir / "summary.md"
    files.write_atomic(summary_md, summary_md.read_text() + "\n".join(rows) + "\n")
    _add_to_summary(sweep_dir, slurm_tasks=tasks)


def _add_to_summary(sweep_dir: Path, **fields: Any) -> None:
    summary = json.loads((sweep_dir / "summary.json").read_text())
    summary.update(fields)
    files.write_atomic(sweep_dir / "summary.json", json.dumps(summary, indent=2) + "\n")


def _check_host(cfg: DictConfig) -> None:
    from harness.outputs import check_paths, check_room

    check_paths(cfg)
    check_room(cfg)


MAX_RUNS = 100  # a sweep of more is most likely a typo; max_runs=N raises the bound


def planned_runs(benchmark: str, runs: Optional[int]) -> int:
    """runs= when given, else MLPerf's required count for the benchmark (5 when MLPerf names none)."""
    from harness.results.analysis.score import required_runs

    return runs if runs is not None else required_runs(benchmark) or 5


def _count(arg: str) -> int:
    key, _, text = arg.partition("=")
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{arg}: {key} is a whole number of runs") from None
    if value < 1:
        raise ConfigError(f"{arg}: {key} must be at least 1 (leave runs out for MLPerf's required count)")
    return value


def _split_runs(args: list[str]) -> tuple[Optional[int], list[str]]:
    """runs= (checked against max_runs=, default MAX_RUNS) and the other arguments."""
    runs, most, rest = None, MAX_RUNS, []
    for a in args:
        if a.startswith("runs="):
            runs = _count(a)
        elif a.startswith("max_runs="):
            most = _count(a)
        else:
            rest.append(a)
    if runs is not None and runs > most:
        raise ConfigError(f"runs={runs} is more than {most} runs (MLPerf asks for at most 10 a benchmark); "
                          f"add max_runs={runs} to launch that many")
    return runs, rest


def main(argv: Optional[list[str]] = None) -> int:
    # before anything below imports torch (harness.run.seeding does): OpenMP reads its thread count and
    # wait policy once, when torch loads it, and harness.train's own call would come too late
    threads.apply_at_start()
    from harness import registry, train
    registry.publish()  # the sweep's summary reads the models' rules through it
    from harness.config import check_cli, compose, first_values
    from harness.outputs import claim_sweep_dir, sweep_name
    from harness.results.analysis.score import required_runs

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(module_doc(__name__).rstrip())
        return 0
    try:
        runs, overrides = _split_runs(args)
        if any(a.startswith(("seed=", "-m", "--multirun")) for a in overrides):
            raise ConfigError("harness.sweep draws the seeds itself: leave out seed= and -m")
        if any(a.startswith("-") for a in overrides):
            raise ConfigError(f"{next(a for a in overrides if a.startswith('-'))} is not an option; "
                              "pass key=value overrides (python -m harness.sweep --help)")
        check_cli(overrides, check_run=_check_host)
        first = compose(first_values([o for o in overrides if not o.startswith("hydra")]))
        spec = registry.get(first.model.name)
    except ConfigError as err:
        print(f"harness.sweep: error: {err}", file=sys.stderr)
        return 2
    from harness.run import seeding  # torch, once the options are known good: a typo is refused before it

    n = planned_runs(spec.benchmark, runs)
    seeds: list[int] = []
    while len(seeds) < n:  # distinct seeds, drawn from the OS
        s = seeding.draw_seed()
        if s not in seeds:
            seeds.append(s)
    remote = any(a.startswith("hydra/launcher=") and a != "hydra/launcher=basic" for a in overrides)
    name = sweep_name(first, overrides, train.device_of(first, remote))
    try:  # claimed: two sweeps started in the same second get directories of their own
        sweep_dir = claim_sweep_dir(str(first.output_root), name, f"_{n}seeds")
    except ConfigError as err:
        print(f"harness.sweep: error: {err}", file=sys.stderr)
        return 2
    try:
        files.write_atomic(sweep_dir / "seeds.txt", f"# {n} seeds drawn from the OS for {spec.benchmark} (MLPerf "
                          f"requires {required_runs(spec.benchmark)})\n" + "".join(f"{s}\n" for s in seeds))
    except OSError as err:
        sweep_dir.rmdir()  # claimed just now and empty: no orphan folder
        print(f"harness.sweep: error: {err}", file=sys.stderr)
        return 1
    # before harness.train checks each run's config (seconds a thousand runs) and starts them
    print(f"harness.sweep: {n} drawn seeds -> {sweep_dir}/seeds.txt; checking and launching {n} run(s) of "
          f"{spec.name}{' per swept value' if any(',' in o for o in overrides) else ''}", flush=True)
    try:
        return train.main(["-m", f"seed={','.join(map(str, seeds))}", f"hydra.sweep.dir={sweep_dir}", *overrides])
    except SystemExit:
        # the launcher's own checks refused the sweep before any run (hydra/launcher=slurm without SLURM):
        # the folder this call claimed holds its seeds alone, and goes with them
        if [p.name for p in sweep_dir.iterdir()] == ["seeds.txt"]:
            (sweep_dir / "seeds.txt").unlink()
            sweep_dir.rmdir()
        raise


if __name__ == "__main__":
    sys.exit(main())
