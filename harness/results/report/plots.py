"""The report's PNG plots (matplotlib, no display needed).

- quality.png: evaluation quality against epochs trained (v0.5's 0-based epochs shifted by one), one
  line per run (seed) and per quality part (Mask R-CNN's BBOX and SEGM), each part's target dashed;
  the axis names the metric (HR@10, BLEU);
- time_to_train.png: time to train of each run, per group, seeds in numeric order (runs that missed
  the target marked), every panel on one y-axis;
- epochs.png: epochs-to-converge histogram per group, ticks at whole epochs;
- speedup.png: speedup against GPUs with the ideal line, throughput and time to train (with its 95%
  intervals) side by side;
- compare.png (--compare): A's speedup over B per benchmark (labelled with its GPU counts) and the
  geometric means, time to train, throughput and epochs as grouped bars with their 95% intervals; the
  title names the folders A and B; compare_throughput.png for throughput results.
One panel per group (or per system for speedups).
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from harness.results.analysis.speedups import Speedup
from harness.results.analysis.stats import GroupKey
from harness.results.read.summary import RunSummary

TITLE_CHARS = 100  # characters of a speedup chart's title a line: what its 9-point font fits across the figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def _title(key: GroupKey) -> str:
    bench, platform, world, precision, batch = key[:5]
    parts = [bench, platform]
    if world is not None:
        parts.append(f"{world} rank" + ("s" if world != 1 else ""))
    if precision:
        parts.append(precision)
    if batch:
        parts.append(f"batch {batch}")
    if len(key) > 5 and key[5] and key[5] not in platform:
        parts.append(key[5])
    return ", ".join(parts)


def _grid(n: int, plt, sharey: bool = False):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False, sharey=sharey)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def plot_all(groups: dict[GroupKey, list[RunSummary]], speedups: Sequence[Speedup], out_dir: Path,
             target_of: Callable[[GroupKey, list[RunSummary]], Any],
             label_of: Callable[[str], str] = lambda benchmark: "eval_accuracy") -> list[Path]:
    """target_of(key, runs): the group's target (a number, named parts, or None); label_of(benchmark):
    the quality metric's name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    keys = sorted(groups, key=str)
    written = []
    if keys:
        written += [_quality(groups, keys, out_dir, target_of, label_of, plt), _ttt(groups, keys, out_dir, plt),
                    _epochs(groups, keys, out_dir, plt)]
    if speedups:
        written.append(_speedup(speedups, out_dir, plt))
    return written


def seed_order(run: RunSummary) -> tuple:
    """Seeds as numbers (2 before 10); runs without a seed last, by path."""
    s = run.seed
    return (0, s, run.path) if isinstance(s, (int, float)) and not isinstance(s, bool) else (1, 0, str(s) + run.path)


def _parts(q: Any) -> dict[str, float]:
    if isinstance(q, Mapping):
        return {str(k): float(v) for k, v in q.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if isinstance(q, (int, float)) and not isinstance(q, bool):
        return {"": float(q)}
    return {}


def _quality(groups, keys, out_dir, target_of, label_of, plt) -> Path:
    fig, axes = _grid(len(keys), plt)
    styles = ["-", "--", ":", "-."]
    for ax, key in zip(axes, keys):
        runs = sorted(groups[key], key=seed_order)
        for i, run in enumerate(runs):
            lines: dict[str, list] = {}
            shift = 1 if run.round == "v0.5" else 0  # v0.5 counts epochs from 0: plotted as epochs trained
            for e, q in run.evals:
                if isinstance(e, (int, float)) and not isinstance(e, bool):
                    for part, v in _parts(q).items():
                        lines.setdefault(part, []).append((e + shift, v))
            color = f"C{i % 10}"
            for j, (part, points) in enumerate(lines.items()):
                xs, ys = zip(*points)
                seed = f"seed {run.seed}" if run.seed is not None else ""
                label = " ".join(x for x in (seed, part) if x) or None
                ax.plot(xs, ys, marker="o", ms=3, lw=1, color=color, ls=styles[j % 4] if part else "-", label=label)
        target = target_of(key, groups[key])
        for j, (part, value) in enumerate(_parts(target).items()):
            ax.axhline(value, ls="--", color="black" if not part else f"C{7 + j}", lw=1,
                       label=f"target {part + ' ' if part else ''}{value:g}")
        unit = next((r.epoch_unit for r in runs if r.epoch_unit in ("samples", "tokens")), "epoch")
        ax.set(title=_title(key), xlabel=unit, ylabel=label_of(key[0]))
        ax.xaxis.set_major_locator(_integer_ticks())
        if len(groups[key]) <= 12:
            ax.legend(fontsize=7)
    return _save(fig, out_dir / "quality.png", plt)


def _ttt(groups, keys, out_dir, plt) -> Path:
    # one y-axis for every panel: equal bars are equal times, whichever group they belong to
    fig, axes = _grid(len(keys), plt, sharey=True)
    for ax, key in zip(axes, keys):
        runs = sorted(groups[key], key=seed_order)
        labels = [str(r.seed) if r.seed is not None else Path(r.path).parent.name[-8:] for r in runs]
        heights = [r.time_to_train_min or 0.0 for r in runs]
        colors = ["tab:blue" if r.converged else "tab:red" for r in runs]
        ax.bar(range(len(runs)), heights, color=colors)
        ax.set_xticks(range(len(runs)), labels, rotation=45, fontsize=7)
        ax.set(title=_title(key), xlabel="seed (red: did not converge)", ylabel="time to train (min)")
        ax.yaxis.set_tick_params(labelleft=True)  # shared, but each panel keeps its numbers
    return _save(fig, out_dir / "time_to_train.png", plt)


def _epochs(groups, keys, out_dir, plt) -> Path:
    fig, axes = _grid(len(keys), plt)
    for ax, key in zip(axes, keys):
        epochs = [r.epochs_to_converge for r in groups[key] if r.converged and r.epochs_to_converge is not None]
        samples = any(r.epoch_unit == "samples" for r in groups[key])
        lo = hi = 0
        if epochs:
            lo, hi = math.floor(min(epochs)), math.ceil(max(epochs))
            if hi - lo <= 60:  # one bar per epoch count
                ax.hist(epochs, bins=[x - 0.5 for x in range(lo, hi + 2)], rwidth=0.8)
            else:  # counted in samples (or a long tail): matplotlib's bins
                ax.hist(epochs, bins=20, rwidth=0.9)
        ax.set(title=_title(key), xlabel="samples to converge" if samples else "epochs to converge", ylabel="runs")
        if epochs and hi - lo <= 20:
            ax.set_xticks(range(lo, hi + 1))  # whole epochs, even when every run needed the same
        else:
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
        for s in members:  # the 95% interval of each time-to-train speedup (harness.results.analysis.confidence)
            iv = s.confidence.time_interval if s.confidence is not None else None
            if iv is not None and s.time_to_train is not None:
                top = iv.high if iv.high is not None else ax.get_ylim()[1]
                ax.plot([s.world, s.world], [iv.low or 0.0, top], color="C1", lw=3, alpha=0.35,
                        solid_capstyle="butt", label="95% interval" if s is members[0] else None)
        ax.set(title=", ".join(p for p in (bench, system, precision) if p), xlabel="GPUs (ranks)", ylabel="speedup")
        ax.set_xticks(worlds)  # world sizes are counts: no 1.2 GPUs between them
        ax.legend(fontsize=7)
    return _save(fig, out_dir / "speedup.png", plt)


def plot_compare(labels: Sequence[str], series: Mapping[str, Sequence[Optional[float]]], title: str,
                 path: Path, errors: Optional[Mapping[str, Sequence[Optional[tuple]]]] = None) -> Path:
    """Grouped bars: one group per label (benchmark, category geomean, overall), one bar per series;
    errors[series][i] = (low, high) draws bar i's 95% interval (an open bound is drawn to the axis)."""
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(labels) * max(1, len(series)) / 2 + 2), 4.2))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(labels))]
        heights = [v if v is not None else 0.0 for v in values]
        bars = ax.bar(xs, heights, width, label=name)
        for x, v, bound in zip(xs, values, (errors or {}).get(name) or [None] * len(values)):
            if v is not None and bound is not None:
                low, high = bound
                top_of = high if high is not None else v * 1.5
                ax.plot([x, x], [low if low is not None else 0.0, top_of], color="black", lw=1)
        for bar, v in zip(bars, values):
            ax.annotate("n/a" if v is None else f"{v:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=6)
    ax.axhline(1.0, color="black", lw=1, ls="--")
    highs = [b[1] for bs in (errors or {}).values() for b in bs if b is not None and b[1] is not None]
    top = max([v for vs in series.values() for v in vs if v is not None] + [1.0] + highs)
    ax.set_ylim(0, top * 1.25)  # room for the legend above the bars
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    # wrapped: two sides' folder names make a title wider than the figure, cut at both ends
    ax.set_title("\n".join(textwrap.wrap(title, TITLE_CHARS)), fontsize=9)
    ax.set_ylabel("A / B (1 = equal)" + ("; lines: 95% intervals" if errors else ""))
    ax.legend(fontsize=7, loc="upper center", ncol=max(1, len(series)))
    return _save(fig, path, plt)


WRITE_HINT = "free space or write the files elsewhere"


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True, min_n_ticks=1)  # one whole tick rather than fractions


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def save_figure(fig, path: Path, dpi: int = 110) -> None:
    """The figure's image replaces `path` in one step (harness.files.write_atomic)."""
    import io

    from harness.files import write_atomic

    image = io.BytesIO()
    fig.savefig(image, format=path.suffix.lstrip(".") or "png", dpi=dpi)
    write_atomic(path, image.getvalue(), hint=WRITE_HINT)
