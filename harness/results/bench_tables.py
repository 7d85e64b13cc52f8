"""The GPU benchmark suite's summary: from the throughput runs under a bench folder, the throughput
table (median and spread per model, precision and GPU count), the two derived views (scaling
efficiency per model and its mean; each precision's gain over tf32 per model and its mean, over
fp32 for a model that ran no tf32, each gain saying which) as
Markdown and CSV tables and bar charts, under the machine, driver, torch and command that made them.

    python -m harness.bench --tables-only --out outputs/bench/<run>     # rebuild them from the runs
"""
from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.observe.disk import write_atomic
from harness.results import throughput as tp
from harness.results.plots import WRITE_HINT, save_figure
from harness.results.render import markdown_table

# The baseline of the precision gain, in order of preference: the studies the suite reproduces call
# TF32 "FP32" (docs/gpu_suite.md), so amp is set against tf32 where a model ran it, IEEE fp32 otherwise
BASELINES = ("tf32", "fp32")


def _name(view) -> str:
    """A Scaling's or PrecisionGain's row label: its model beside a workload label two models share
    (an implementation of the API without the model field labels by workload alone)."""
    return tp.label(view.workload, getattr(view, "model", ""))


def window_spread(g: tp.ThroughputGroup, runs: Sequence[tp.ThroughputRun]) -> str:
    """Min-max of every measured window of the group's runs, and that range over the median."""
    windows = [w for r in runs if (r.workload, r.model, r.accelerator, r.precision, r.world_size)
               == (g.workload, g.model, g.accelerator, g.precision, g.world_size) for w in r.windows]
    if not windows or not g.median:
        return "n/a"
    return f"{min(windows):,.0f}-{max(windows):,.0f} ({(max(windows) - min(windows)) / g.median:.1%}, {len(windows)} windows)"


def means(values: Sequence[Optional[float]]) -> tuple[Optional[float], Optional[float]]:
    """(arithmetic mean, geometric mean) of the known values."""
    known = [v for v in values if v is not None and v > 0]
    if not known:
        return None, None
    return statistics.fmean(known), math.exp(statistics.fmean(math.log(v) for v in known))


def _fmt(v: Optional[float], spec: str = ".3f") -> str:
    return "n/a" if v is None else format(v, spec)


def summarise(runs: Sequence[tp.ThroughputRun], meta: dict[str, Any], out_dir: Path,
              order: Sequence[str] = ()) -> list[Path]:
    """Write results.md, throughput.csv, scaling.csv, precision.csv, scaling.png and precision.png;
    models in `order` first, in that order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rank = {m: i for i, m in enumerate(order)}
    gs = sorted(tp.groups(runs), key=lambda g: (rank.get(g.model, len(rank)), g.model, g.workload, g.precision,
                                                g.world_size))
    scalings, gains = tp.scaling(gs), tp.precision_gains(gs, BASELINES)
    head, rows = tp.table_rows(gs)
    head, rows = head + ["windows (spread)"], [row + [window_spread(g, runs)] for row, g in zip(rows, gs)]
    written = [_csv(out_dir / "throughput.csv", head, rows)]
    s_head, s_rows = tp.scaling_rows(scalings)
    g_head, g_rows = gain_rows(gains)
    written += [_csv(out_dir / "scaling.csv", s_head, s_rows), _csv(out_dir / "precision.csv", g_head, g_rows)]
    lines = [f"# GPU benchmark suite: {meta.get('machine', '?')}", "",
             f"Date {meta.get('date', '?')}; host {meta.get('host', '?')} ({meta.get('cpu', '?')}); driver "
             f"{meta.get('driver') or 'n/a'}; torch {meta.get('torch', '?')}, CUDA {meta.get('cuda') or 'n/a'}, "
             f"cuDNN {meta.get('cudnn') or 'n/a'}; Python {meta.get('python', '?')}.", "",
             f"Command: `{meta.get('command', '?')}`", "",
             f"{meta.get('cells_run', 0)} cells, {meta.get('cells_failed', 0)} failed, {meta.get('minutes', 0):.1f} min "
             f"of cell time; each cell a `python -m harness.train ... mode=throughput` run: warm-up steps left out, "
             f"then repeated windows; the median window is the cell's throughput.", "",
             "## Throughput", "", markdown_table(head, rows), ""]
    lines += ["## Scaling efficiency (speed-up / GPUs)", "",
              markdown_table(s_head, s_rows) if s_rows else "(no model ran on two GPU counts)", ""]
    for key, members in _by(scalings, lambda s: (s.precision, s.base_world, s.world)).items():
        mean, _ = means([s.efficiency for s in members])
        if mean is None:
            continue  # no pair of the group measured: nothing to average
        lines.append(f"- mean efficiency, {key[0]}, {key[2]} vs {key[1]} GPUs: {_fmt(mean)} over {len(members)} models")
    lines += ["", "![scaling efficiency](scaling.png)" if scalings else "", "",
              "## Precision gain over tf32 (over fp32 where a model ran no tf32)", "",
              markdown_table(g_head, g_rows) if g_rows else "(no model ran in tf32 or fp32 and another precision)", ""]
    for key, members in _by(gains, lambda p: (p.precision, p.baseline, p.world_size)).items():
        mean, geo = means([p.ratio for p in members])
        if mean is None:
            continue
        lines.append(f"- mean {key[0]} / {key[1]} on {key[2]} GPU(s): {_fmt(mean)}x (geometric {_fmt(geo)}x) over "
                     f"{len(members)} models")
    lines += ["", "![precision gain](precision.png)" if gains else "", ""]
    failed = [r for r in runs if r.status != "success"]
    if failed:
        lines += ["## Failed cells", ""] + [f"- {tp.label(r.workload, r.model)} {r.precision} {r.world_size} GPU(s): "
                                            f"{r.reason or 'no reason recorded'} ({r.path})" for r in failed] + [""]
    write_atomic(out_dir / "results.md", "\n".join(lines), hint=WRITE_HINT)
    written.append(out_dir / "results.md")
    written += _charts(scalings, gains, out_dir)
    return written


def gain_rows(gains: Sequence[tp.PrecisionGain]) -> tuple[list[str], list[list[str]]]:
    """The precision table: each gain labelled with the precisions it sets against each other ("amp / tf32")."""
    header = ["workload", "accelerator", "GPUs", "gain", "throughput ratio"]
    return header, [[_name(p), p.accelerator, str(p.world_size), f"{p.precision} / {p.baseline}",
                     "n/a" if p.ratio is None else f"{p.ratio:.2f}x"] for p in gains]


def _by(items, key) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def _csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows(rows)
    write_atomic(path, text.getvalue(), hint=WRITE_HINT)
    return path


def _charts(scalings: Sequence[tp.Scaling], gains: Sequence[tp.PrecisionGain], out_dir: Path) -> list[Path]:
    """Bar charts of the two views, one bar per model and series, the mean as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    written = []
    for name, items, series, value, ideal, ylabel in (
        ("scaling.png", scalings, lambda s: f"{s.precision}, {s.world} vs {s.base_world} GPUs",
         lambda s: s.efficiency, 1.0, "scaling efficiency (speed-up / GPUs)"),
        ("precision.png", gains, lambda p: f"{p.precision} / {p.baseline}, {p.world_size} GPU(s)",
         lambda p: p.ratio, 1.0, "throughput ratio over tf32 (fp32 where no tf32 ran)"),
    ):
        if not items:
            continue
        labels = list(dict.fromkeys(_name(i) for i in items))
        groups = _by(items, lambda i, series=series: (series(i),))
        fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(labels) + 2), 4.2))
        width = 0.8 / max(len(groups), 1)
        for k, ((title,), members) in enumerate(groups.items()):
            values = {_name(i): value(i) for i in members}
            xs = [x + k * width for x in range(len(labels))]
            ax.bar(xs, [values.get(lab) or 0.0 for lab in labels], width, label=title)
            mean, _ = means(list(values.values()))
            if mean is not None:
                ax.axhline(mean, ls="--", lw=1, color=f"C{k}", label=f"mean {mean:.2f}")
        ax.axhline(ideal, color="black", lw=0.8)
        ax.set_xticks([x + width * (len(groups) - 1) / 2 for x in range(len(labels))], labels, rotation=30,
                      ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        save_figure(fig, out_dir / name)
        plt.close(fig)
        written.append(out_dir / name)
    return written
