"""The report's PNG plots (matplotlib, no display needed).

- quality.png: evaluation quality against epoch, one line per run (seed), the target dashed;
- time_to_train.png: time to train of each run, per group (runs that missed the target marked);
- epochs.png: epochs-to-converge histogram per group;
- speedup.png: speedup against GPUs with the ideal line, throughput and time-to-train side by side.
One panel per group (or per system for speedups).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Optional, Sequence

from harness.results.compare import Speedup
from harness.results.parse import RunSummary
from harness.results.stats import GroupKey


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def _title(key: GroupKey) -> str:
    bench, platform, world, precision, batch = key
    parts = [bench, platform]
    if world is not None:
        parts.append(f"{world} rank" + ("s" if world != 1 else ""))
    if precision:
        parts.append(precision)
    if batch:
        parts.append(f"batch {batch}")
    return ", ".join(parts)


def _grid(n: int, plt):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def plot_all(groups: dict[GroupKey, list[RunSummary]], speedups: Sequence[Speedup], out_dir: Path,
             target_of: Callable[[str], Optional[float]]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    keys = sorted(groups, key=str)
    written = []
    if keys:
        written += [_quality(groups, keys, out_dir, target_of, plt), _ttt(groups, keys, out_dir, plt),
                    _epochs(groups, keys, out_dir, plt)]
    if speedups:
        written.append(_speedup(speedups, out_dir, plt))
    return written


def _quality(groups, keys, out_dir, target_of, plt) -> Path:
    fig, axes = _grid(len(keys), plt)
    for ax, key in zip(axes, keys):
        for run in sorted(groups[key], key=lambda r: str(r.seed)):
            points = [(e, q) for e, q in run.evals if isinstance(e, (int, float)) and isinstance(q, (int, float))]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker="o", ms=3, lw=1, label=f"seed {run.seed}" if run.seed is not None else None)
        target = target_of(key[0])
        if target is not None:
            ax.axhline(target, ls="--", color="black", lw=1, label=f"target {target:g}")
        ax.set(title=_title(key), xlabel="epoch", ylabel="eval_accuracy")
        ax.xaxis.set_major_locator(_integer_ticks())
        if len(groups[key]) <= 12:
            ax.legend(fontsize=7)
    return _save(fig, out_dir / "quality.png", plt)


def _ttt(groups, keys, out_dir, plt) -> Path:
    fig, axes = _grid(len(keys), plt)
    for ax, key in zip(axes, keys):
        runs = sorted(groups[key], key=lambda r: str(r.seed))
        labels = [str(r.seed) if r.seed is not None else Path(r.path).parent.name[-8:] for r in runs]
        heights = [r.time_to_train_min or 0.0 for r in runs]
        colors = ["tab:blue" if r.converged else "tab:red" for r in runs]
        ax.bar(range(len(runs)), heights, color=colors)
        ax.set_xticks(range(len(runs)), labels, rotation=45, fontsize=7)
        ax.set(title=_title(key), xlabel="seed (red: did not converge)", ylabel="time to train (min)")
    return _save(fig, out_dir / "time_to_train.png", plt)


def _epochs(groups, keys, out_dir, plt) -> Path:
    fig, axes = _grid(len(keys), plt)
    for ax, key in zip(axes, keys):
        epochs = [r.epochs_to_converge for r in groups[key] if r.converged and r.epochs_to_converge is not None]
        if epochs:
            lo, hi = math.floor(min(epochs)), math.ceil(max(epochs))
            ax.hist(epochs, bins=[x - 0.5 for x in range(lo, hi + 2)], rwidth=0.8)
        ax.set(title=_title(key), xlabel="epochs to converge", ylabel="runs")
        ax.xaxis.set_major_locator(_integer_ticks())
        ax.yaxis.set_major_locator(_integer_ticks())
    return _save(fig, out_dir / "epochs.png", plt)


def _speedup(speedups: Sequence[Speedup], out_dir, plt) -> Path:
    families: dict[tuple, list[Speedup]] = {}
    for s in speedups:
        families.setdefault((s.benchmark, s.system, s.precision, s.baseline_world), []).append(s)
    fig, axes = _grid(len(families), plt)
    for ax, ((bench, system, precision, base), members) in zip(axes, sorted(families.items(), key=str)):
        members = sorted(members, key=lambda s: s.world)
        worlds = [base] + [s.world for s in members]
        ax.plot(worlds, [w / base for w in worlds], ls="--", color="black", lw=1, label="ideal (linear)")
        ax.plot(worlds, [1.0] + [s.throughput or math.nan for s in members], marker="o",
                label="throughput" + (" (implied)" if any(s.throughput_implied for s in members) else ""))
        ax.plot(worlds, [1.0] + [s.time_to_train or math.nan for s in members], marker="s", label="time to train")
        ax.set(title=f"{bench}, {system}, {precision or ''}", xlabel="GPUs (ranks)", ylabel="speedup")
        ax.set_xticks(worlds)  # world sizes are counts: no 1.2 GPUs between them
        ax.legend(fontsize=7)
    return _save(fig, out_dir / "speedup.png", plt)


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
