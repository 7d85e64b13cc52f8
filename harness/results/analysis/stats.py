"""Per-group statistics of runs (time to train, epochs to converge as MLPerf's RCP checker reads them,
throughput, init time) and the RCP checker's test of whether a group converges significantly faster.

The RCP arithmetic is mlperf_logging's rcp_checker (compute_rcp_stats, _find_min_acceptable_mean):
the reference mean is the olympic mean of its epochs, its stdev numpy's std (ddof=0) over all of them,
and a group of N runs counts as significantly faster when its olympic mean falls below
    mean - t(0.95, n_ref + n_sub - 2) * stdev * sqrt(1/n_ref + 1/n_sub)
with n_ref and n_sub the run counts less the two dropped ones (the one-sided pooled t-test at 0.05).

The seed-variance view (`seed_spread`), per group of converged runs: the epochs-to-converge counts, the time
to train at the fewest and the most epochs, and the share of the variance of time to train that epochs explain
(R^2 of time to train on epochs: 1.0 is all seed luck in epochs, 0 none; the rest is throughput and time outside
the loop). The table and the words: harness.results.report.explain.
"""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence

from harness.results.read.summary import RunSummary, one_line
from harness.results.read.tree import benchmark_alias


class GroupKey(NamedTuple):
    """Runs of one benchmark on one system: platform, world size, precision, global batch, and the
    accelerator model and framework (from the tree's system description or the harness's files).
    In a submission tree a group is one benchmark folder (`folder`), as the official summarizer
    scores it; its platform is then `<division>/<org>/<system>` and the other fields are what all of
    the folder's runs agree on (None where they differ)."""

    benchmark: str
    platform: str
    world: Optional[int]
    precision: Optional[str]
    batch: Optional[int]
    accelerator: Optional[str] = None
    framework: Optional[str] = None
    folder: Optional[str] = None  # the submission folder, where the runs come from one
    target: Optional[str] = None  # the target its runs state, where runs alike but for it state several
    settings: Optional[str] = None  # what its runs were set to, where runs alike but for it (a swept option) differ


BUSY = "!"  # the mark of a run on a busy machine, in the report's tables and in its warnings


def key_cells(key: GroupKey, extra: bool = False) -> list[str]:
    """How the report names a group: benchmark, platform, world size, precision, batch (and with `extra`
    the accelerator and framework)."""
    cells = [group_name(key), key.platform, "n/a" if key.world is None else str(key.world), key.precision or "n/a",
             "n/a" if key.batch is None else str(key.batch)]
    return cells + ([key.accelerator or "n/a", key.framework or "n/a"] if extra else [])


def group_name(key: GroupKey) -> str:
    """The benchmark as the report names a group: 'ncf', 'ncf (model.learning_rate=0.006)'."""
    marks = [m for m in (key.target and f"target {key.target}", key.settings) if m]
    return f"{key.benchmark} ({'; '.join(marks)})" if marks else key.benchmark


def group_key(run: RunSummary) -> GroupKey:
    """A run's group outside a submission tree: by the log's own fields (group_runs puts a tree's runs
    in their folder's group)."""
    return GroupKey(run.benchmark or "?", run.platform or "?", run.world_size, run.precision, run.global_batch_size,
                    run.accelerator, run.framework)


def folder_label(folder: str, division: Optional[str]) -> str:
    """'closed/NVIDIA/dgxa100_ngc20.06_pytorch' for .../NVIDIA/results/dgxa100_ngc20.06_pytorch/gnmt."""
    parts = Path(folder).parts
    org, system = (parts[-4], parts[-2]) if len(parts) >= 4 else ("?", parts[-2] if len(parts) >= 2 else "?")
    return one_line(f"{division or 'division n/a'}/{org}/{system}")


def _common(values: Sequence) -> Any:
    found = {v for v in values if v is not None}
    return found.pop() if len(found) == 1 else None


def group_runs(runs: Sequence[RunSummary]) -> dict[GroupKey, list[RunSummary]]:
    """The runs that form groups, by group: a submission tree's runs by their folder (with its division),
    other runs by group_key. Interrupted runs are in no group: MLPerf scores completed runs only, and one
    stopped before its log named its batch would otherwise stand alone."""
    groups: dict[GroupKey, list[RunSummary]] = {}
    folders: dict[str, list[RunSummary]] = {}
    for run in runs:
        if run.interrupted is not None:
            continue
        if run.folder is not None:
            folders.setdefault(run.folder, []).append(run)
        else:
            groups.setdefault(group_key(run), []).append(run)
    for folder, members in folders.items():
        benchmark = benchmark_alias(Path(folder).name)
        key = GroupKey(benchmark, folder_label(folder, _common([r.division for r in members])),
                       _common([r.world_size for r in members]), _common([r.precision for r in members]),
                       _common([r.global_batch_size for r in members]), _common([r.accelerator for r in members]),
                       _common([r.framework for r in members]), folder)
        groups[key] = members
    return _by_settings(_by_target(groups))


def _by_settings(groups: dict[GroupKey, list[RunSummary]]) -> dict[GroupKey, list[RunSummary]]:
    """Harness runs set differently (a Hydra sweep over model.learning_rate, ddp_bucket_mb, a generator) are
    one group per setting, named by the options that differ: one learning rate's seeds are one score's runs.
    A submission folder is scored whole, as the summarizer scores it; runs without a config are not split."""
    out: dict[GroupKey, list[RunSummary]] = {}
    for key, runs in groups.items():
        variants = {r.settings for r in runs}
        if key.folder is not None or len(variants) < 2 or () in variants:
            out[key] = runs
            continue
        keys = {k for v in variants for k, _ in v}
        differ = sorted(k for k in keys if len({dict(v).get(k) for v in variants}) > 1)
        for run in runs:
            shown = dict(run.settings)
            label = ", ".join(f"{k}={shown.get(k, 'n/a')}" for k in differ)
            out.setdefault(key._replace(settings=label), []).append(run)
    return out


def _by_target(groups: dict[GroupKey, list[RunSummary]]) -> dict[GroupKey, list[RunSummary]]:
    """A group whose runs state different targets (result.json's target, v0.5's eval_target) is one group
    per target: a time to reach 0.7 and a time to reach 0.635 are not one score's runs."""
    out: dict[GroupKey, list[RunSummary]] = {}
    for key, runs in groups.items():
        stated = {_target_text(r.target) for r in runs}
        if len(stated) < 2:
            out[key] = runs
            continue
        for run in runs:
            out.setdefault(key._replace(target=_target_text(run.target)), []).append(run)
    return out


def _target_text(target: Any) -> str:
    if target is None:
        return "n/a"
    if isinstance(target, dict):
        return " ".join(f"{k} {_target_text(v)}" for k, v in sorted(target.items()))
    return format(target, "g") if isinstance(target, (int, float)) else str(target)


def platform_kind(platform: str) -> str:
    """'8xNVIDIA H200' -> 'NVIDIA H200': the system, whatever its count (speedups compare counts)."""
    return re.sub(r"^\d+\s*x\s*", "", platform or "?")


def accelerator_kind(accelerator: Optional[str], platform: str = "?") -> str:
    """The chip a system counts, whatever its board or memory or spelling: 'NVIDIA A100-SXM4-40GB (400W)' -> 'A100';
    'NVIDIA L4' -> 'L4'; 'TPU-v5p' -> 'TPU v5p' (not v5e's 'TPU v5'), 'TPU-trillium' -> 'TPU v6e', a bare 'TPU' of
    'closed/Google/tpu-v4-128-TF' -> 'TPU v4'; 'Intel(R) Gaudi(R) 2 AI Accelerator' -> 'Gaudi 2'; else as written."""
    if not accelerator:
        return platform_kind(platform)
    m = re.search(r"tpu[\s_-]*v?(\d+)([a-z]?)\b", accelerator, re.I) or (
        re.search(r"tpu[\s_-]*v(\d+)([a-z]?)\b", platform or "", re.I) if accelerator.strip().upper() == "TPU" else None)
    if m or re.search(r"trillium", accelerator, re.I):
        return f"TPU v{m.group(1)}{m.group(2).lower()}" if m else "TPU v6e"
    if m := re.search(r"gaudi(?:\(r\))?\W*(\d?)", accelerator, re.I):  # Habana's first Gaudi writes no number
        return f"Gaudi {m.group(1)}".strip()
    m = re.search(r"\b([A-Z]{1,2}\d{1,3}[A-Z]?)\b", accelerator.replace("-", " "))
    return m.group(1) if m else accelerator


@dataclass(frozen=True)
class Spread:
    n: int
    mean: Optional[float]
    median: Optional[float]
    std: Optional[float]  # ddof=0, as MLPerf's RCP checker computes it
    min: Optional[float]
    max: Optional[float]

    @classmethod
    def of(cls, values: Sequence[Optional[float]]) -> "Spread":
        v = [float(x) for x in values if x is not None]
        if not v:
            return cls(0, None, None, None, None, None)
        try:
            mean, std = statistics.fmean(v), statistics.pstdev(v)
        except OverflowError:  # figures near a float's limit (a damaged file): their sum has no value
            mean = std = math.inf
        return cls(len(v), mean, statistics.median(v), std, min(v), max(v))


@dataclass(frozen=True)
class EpochStats:
    n: int
    mean: Optional[float]
    olympic_mean: Optional[float]  # drop the fastest and the slowest, as MLPerf's RCP mean
    std: Optional[float]  # ddof=0 over every converged run, as the RCP checker
    min: Optional[float]
    max: Optional[float]
    counts: dict[str, int] = field(default_factory=dict)  # epochs -> runs

    @classmethod
    def of(cls, epochs: Sequence[Optional[float]], dropped: int = 1) -> "EpochStats":
        e = sorted(float(x) for x in epochs if x is not None)
        if not e:
            return cls(0, None, None, None, None, None, {})
        kept = e[dropped: len(e) - dropped]
        counts = Counter(_label(x) for x in e)
        return cls(len(e), statistics.fmean(e), statistics.fmean(kept) if kept else None, statistics.pstdev(e),
                   e[0], e[-1], dict(sorted(counts.items(), key=lambda kv: float(kv[0]))))


def _label(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class GroupStats:
    key: GroupKey
    runs: int
    converged: int
    time_to_train_min: Spread  # converged runs only: a run that missed the target has no time to train
    epochs: EpochStats
    throughput: Spread
    init_time_s: Spread
    seeds: list
    energy_j: Spread = Spread.of([])  # converged runs with telemetry: energy to train
    power_w: Spread = Spread.of([])
    accelerators: list = field(default_factory=list)  # GPU models seen in the group
    throughput_unit: Optional[str] = None  # "samples/s", "tokens/s", "epochs/s"
    throughput_derived: bool = False  # from epoch intervals (docs/report.md), not tracked_stats
    epoch_unit: str = "epochs"  # what epochs count: "epochs", "samples", "steps", "tokens" (the converged runs')
    rounds: list = field(default_factory=list)  # MLPerf rounds of the runs' logs
    busy: int = 0  # runs made while other processes used the machine

    @property
    def repeated_seeds(self) -> dict:
        """Seeds that more than one run of the group used: {seed: runs}."""
        counts = Counter(s for s in self.seeds if s is not None)
        return {s: n for s, n in counts.items() if n > 1}


def group_stats(key: GroupKey, runs: Sequence[RunSummary]) -> GroupStats:
    conv = [r for r in runs if r.converged]
    dropped = 4 if key[0] == "unet3d" else 1
    return GroupStats(
        key=key, runs=len(runs), converged=len(conv),
        time_to_train_min=Spread.of([r.time_to_train_min for r in conv]),
        epochs=EpochStats.of([r.epochs_to_converge for r in conv], dropped),
        throughput=Spread.of([r.throughput for r in runs if r.throughput]),
        init_time_s=Spread.of([r.init_time_s for r in runs if r.init_time_s is not None]),
        seeds=[r.seed for r in runs],
        energy_j=Spread.of([r.energy_j for r in conv if r.energy_j is not None]),
        power_w=Spread.of([r.power_w for r in runs if r.power_w is not None]),
        accelerators=sorted({r.accelerator for r in runs if r.accelerator}),
        throughput_unit=Counter(r.throughput_unit for r in runs if r.throughput).most_common(1)[0][0]
        if any(r.throughput for r in runs) else None,
        throughput_derived=any(r.throughput_derived for r in runs if r.throughput),
        epoch_unit=Counter(r.epoch_unit for r in conv).most_common(1)[0][0] if conv else "epochs",
        rounds=sorted({r.round for r in runs if r.round}),
        busy=sum(1 for r in runs if r.busy),
    )


@dataclass(frozen=True)
class RCPVerdict:
    reference_mean: float  # olympic mean of the reference group's epochs
    reference_std: float
    min_acceptable_mean: float  # below this, the group converges significantly faster
    group_mean: float
    passed: bool


def min_acceptable_mean(mean: float, std: float, n_ref: int, n_sub: int, alpha: float = 0.05) -> float:
    """The RCP checker's bound, in closed form (see the module docstring)."""
    from scipy.stats import t

    if std == 0 or n_ref + n_sub <= 2:
        return mean
    bound = mean - float(t.ppf(1 - alpha, n_ref + n_sub - 2)) * std * math.sqrt(1 / n_ref + 1 / n_sub)
    return max(bound, 0.0)  # plain floats: the verdict goes into JSON


def rcp_check(reference: GroupStats, group: GroupStats) -> Optional[RCPVerdict]:
    """None when either group has too few converged runs for an olympic mean."""
    ref, sub = reference.epochs, group.epochs
    if ref.olympic_mean is None or sub.olympic_mean is None or ref.std is None:
        return None
    dropped = 4 if reference.key[0] == "unet3d" else 1
    bound = min_acceptable_mean(ref.olympic_mean, ref.std, ref.n - 2 * dropped, group.runs - 2 * dropped)
    return RCPVerdict(ref.olympic_mean, ref.std, bound, sub.olympic_mean, bool(sub.olympic_mean >= bound))


@dataclass(frozen=True)
class SeedSpread:
    key: GroupKey
    runs: int
    converged: int
    epochs: dict  # epochs -> runs
    ttt_std: Optional[float]  # minutes, ddof=0
    ttt_cv: Optional[float]  # std / mean
    explained: Optional[float]  # share of the variance of time to train that epochs explain (R^2)
    ttt_at_fewest: Optional[float]  # mean minutes of the runs at the fewest epochs
    ttt_at_most: Optional[float]  # ... at the most epochs
    slowest: Optional[str]  # the slowest converged run's log
    slowest_epochs: Optional[float] = None
    slowest_min: Optional[float] = None
    unit: str = "epochs"  # what convergence is counted in (samples, steps: the RCP checker's unit)


def seed_spread(key: GroupKey, runs: Sequence[RunSummary]) -> SeedSpread:
    # (epochs, minutes, log) of each converged run
    conv = [(float(r.epochs_to_converge), float(r.time_to_train_min), r.path) for r in runs
            if r.converged and r.epochs_to_converge is not None and r.time_to_train_min is not None]
    by_epochs: dict[str, list[float]] = {}
    for e, minutes, _ in conv:
        by_epochs.setdefault(_label(e), []).append(minutes)
    counts = {k: len(v) for k, v in sorted(by_epochs.items(), key=lambda kv: float(kv[0]))}
    if len(conv) < 2:
        return SeedSpread(key, len(runs), len(conv), counts, None, None, None, None, None, None)
    x = [e for e, _, _ in conv]
    y = [m for _, m, _ in conv]
    std, mean = statistics.pstdev(y), statistics.fmean(y)
    explained = 0.0
    if statistics.pstdev(x) > 0 and std > 0:
        explained = statistics.correlation(x, y) ** 2
    lo, hi = min(counts, key=float), max(counts, key=float)
    slowest = max(conv, key=lambda c: c[1])
    unit = next((r.epoch_unit for r in runs if r.path == slowest[2]), "epochs")
    return SeedSpread(key, len(runs), len(conv), counts, std, std / mean if mean else None, explained,
                      statistics.fmean(by_epochs[lo]), statistics.fmean(by_epochs[hi]), slowest[2],
                      slowest[0], slowest[1], unit)
