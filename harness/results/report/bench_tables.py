"""The GPU benchmark suite's summary: from the throughput runs under a bench folder, the throughput
table (median and spread per model, precision and GPU count), the three derived views (scaling
efficiency per model and its mean; each precision's gain over tf32 per model and its mean, over
fp32 for a model that ran no tf32, each gain saying which, on like paths; each fast path over the
eager step of its cell) as Markdown and CSV tables and bar charts, under the machine, driver, torch
and command that made them, and all of it as one HTML page (harness/results/report/bench_page.py).

    python -m harness.bench --tables-only --out outputs/bench/<run>     # rebuild them from the runs
"""
from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from harness.files import write_atomic
from harness.results.analysis import throughput as tp
from harness.results.report import bench_page, render, sections
from harness.results.report.bench_page import SMOKE, ran_on, title as page_title
from harness.results.report.plots import WRITE_HINT
from harness.results.report.render import markdown_table

# The baseline of the precision gain, in order of preference: the studies the suite reproduces call
# TF32 "FP32" (docs/gpu_suite.md), so amp is set against tf32 where a model ran it, IEEE fp32 otherwise
BASELINES = ("tf32", "fp32")


def smoke_banner(meta: dict[str, Any]) -> list[str]:
    """The Markdown lines that open the tables of a --smoke run, nothing for a real one."""
    if not meta.get("smoke"):
        return []
    return [f"## {SMOKE}", "",
            f"`--smoke` checks that each model runs: every model at its debug preset (a few narrow layers and "
            f"short sequences, not the real sizes), one warm-up and one counted step on {ran_on(meta)}, fp32. "
            "These figures measure no model and compare nothing: a large model's debug preset can outrun a small one's. "
            "Run `python -m harness.bench` (no --smoke) on the GPUs for the benchmark.", ""]


def _name(view) -> str:
    """A Scaling's or PrecisionGain's row label: its model beside a workload label two models share
    (an implementation of the API without the model field labels by workload alone)."""
    return sections.label(view.workload, getattr(view, "model", ""))


def window_spread(g: tp.ThroughputGroup, runs: Sequence[tp.ThroughputRun]) -> str:
    """Min-max of every measured window of the group's runs, and that range over the median."""
    windows = [w for r in runs if (r.workload, r.model, r.accelerator, r.precision, r.world_size)
               == (g.workload, g.model, g.accelerator, g.precision, g.world_size) for w in r.windows]
    if not windows or not g.median:
        return "n/a"
    low, high = render.throughput(min(windows)), render.throughput(max(windows))
    return f"{low}-{high} ({(max(windows) - min(windows)) / g.median:.1%}, {len(windows)} windows)"


UTILISATION = ("GFLOP a sample", "TFLOP/s", "MFU")  # harness/run/flops.py: 3x the forward's FLOPs, dense peak


def utilisation(g: tp.ThroughputGroup) -> list[str]:
    """A group's model FLOPs a sample, achieved TFLOP/s and MFU, each "n/a" where the runs recorded none."""
    return ["n/a" if g.flops_per_sample is None else f"{g.flops_per_sample / 1e9:.4g}",
            "n/a" if g.achieved_tflops is None else f"{g.achieved_tflops:.4g}",
            "n/a" if g.mfu is None else f"{g.mfu:.1%}"]


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
    """Write results.md, throughput.csv, scaling.csv, precision.csv, fast_path.csv, their charts
    (scaling.png, precision.png, fast_path.png) and results.html, each file replaced in one step;
    models in `order` first, in that order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rank = {m: i for i, m in enumerate(order)}
    gs = sorted(tp.groups(runs), key=lambda g: (rank.get(g.model, len(rank)), g.model, g.workload, g.precision,
                                                g.world_size))
    scalings, gains, fast = tp.scaling(gs), tp.precision_gains(gs, BASELINES), tp.fast_vs_eager(gs)
    head, rows = sections.table_rows(gs)  # its last column, the windows' range, is said again with their spread
    head, rows = head[:-1] + [*UTILISATION, "windows (spread)"], [
        row[:-1] + utilisation(g) + [window_spread(g, runs)] for row, g in zip(rows, gs)]
    tables = {"throughput.csv": (head, rows), "scaling.csv": sections.scaling_rows(scalings),
              "precision.csv": gain_rows(gains), "fast_path.csv": sections.fast_rows(fast)}
    charts = _charts(scalings, gains, fast)
    body = _sections(runs, meta, tables, scalings, gains, fast, charts)
    files: dict[str, Union[str, bytes]] = {name: _csv(*table) for name, table in tables.items()}
    files["results.md"] = "\n".join(_heading(meta)) + "\n" + body
    files.update(charts)
    files["results.html"] = bench_page.page(meta, body, charts)  # last: a page beside its tables
    return [_replace(out_dir / name, data) for name, data in files.items()]


def _heading(meta: dict[str, Any]) -> list[str]:
    device = ran_on(meta)
    stack = (f"ran on the CPU; torch {meta.get('torch', '?')}" if device == "CPU" else
             f"driver {meta.get('driver') or 'n/a'}; torch {meta.get('torch', '?')}, CUDA {meta.get('cuda') or 'n/a'}, "
             f"cuDNN {meta.get('cudnn') or 'n/a'}")
    return [f"# {page_title(meta)}", "",
            f"Date {meta.get('date', '?')}; host {meta.get('host', '?')} ({meta.get('cpu', '?')}); {stack}; "
            f"Python {meta.get('python', '?')}.", "",
            f"Command: `{meta.get('command', '?')}`", ""]


def _sections(runs: Sequence[tp.ThroughputRun], meta: dict[str, Any], tables: dict[str, tuple[list[str], list[list[str]]]],
              scalings: Sequence[tp.Scaling], gains: Sequence[tp.PrecisionGain], fast: Sequence[tp.FastGain],
              charts: dict[str, bytes]) -> str:
    """The Markdown both results.md and results.html hold: the cells, then one section per view."""
    lines = smoke_banner(meta) + [f"{meta.get('cells_run', 0)} cells, {meta.get('cells_failed', 0)} failed, {meta.get('minutes', 0):.1f} min "
             f"of cell time; each cell a `python -m harness.train ... mode=throughput` run: warm-up steps left out, "
             f"then repeated windows; the median window is the cell's throughput.", "",
             "## Throughput" + (" (smoke run: debug presets, not a benchmark)" if meta.get("smoke") else ""), "",
             markdown_table(*tables["throughput.csv"]), "", _utilisation_line(runs), ""]
    s_head, s_rows = tables["scaling.csv"]
    lines += ["## Scaling efficiency (speed-up / GPUs)", "",
              markdown_table(s_head, s_rows) if s_rows else "(no model ran on two GPU counts)", ""]
    for key, members in _by(scalings, lambda s: (s.precision, s.base_world, s.world)).items():
        mean, _ = means([s.efficiency for s in members])
        if mean is None:
            continue  # no pair of the group measured: nothing to average
        lines.append(f"- mean efficiency, {key[0]}, {key[2]} vs {key[1]} GPUs: {_fmt(mean)} over {len(members)} models")
    g_head, g_rows = tables["precision.csv"]
    lines += ["", _chart_line("scaling.png", charts), "",
              "## Precision gain over tf32 (over fp32 where a model ran no tf32)", "",
              "On the same path: a fast step against the baseline's fast step (amp+graph / tf32+graph), an eager "
              "one against the eager baseline.", "",
              markdown_table(g_head, g_rows) if g_rows else "(no model ran in tf32 or fp32 and another precision)", ""]
    for key, members in _by(gains, lambda p: (p.precision, p.baseline, p.world_size)).items():
        mean, geo = means([p.ratio for p in members])
        if mean is None:
            continue
        lines.append(f"- mean {key[0]} / {key[1]} on {key[2]} GPU(s): {_fmt(mean)}x (geometric {_fmt(geo)}x) over "
                     f"{len(members)} models")
    f_head, f_rows = tables["fast_path.csv"]
    lines += ["", _chart_line("precision.png", charts), "",
              "## Fast path vs eager", "",
              "Each fast path's median over the eager step's median of the same model, GPUs and precision.", "",
              markdown_table(f_head, f_rows) if f_rows else "(no cell ran both a fast path and its eager step)", ""]
    for key, members in _by(fast, lambda f: (f.path, f.base, f.world_size)).items():
        mean, geo = means([f.ratio for f in members])
        if mean is not None:
            lines.append(f"- mean {key[1]}+{key[0]} / {key[1]} on {key[2]} GPU(s): {_fmt(mean)}x (geometric "
                         f"{_fmt(geo)}x) over {len(members)} models")
    lines += ["", _chart_line("fast_path.png", charts), ""]
    fell_back = [r for r in runs if r.fallback]
    if fell_back:
        lines += ["## Fell back to the eager step", ""] + [
            f"- {sections.label(r.workload, r.model)} {r.precision} {r.world_size} GPU(s): {r.fallback} ({r.path})"
            for r in fell_back] + [""]
    failed = [r for r in runs if r.status != "success"]
    if failed:
        lines += ["## Failed cells", ""] + [f"- {sections.label(r.workload, r.model)} {r.precision} {r.world_size} GPU(s): "
                                            f"{r.reason or 'no reason recorded'} ({r.path})" for r in failed] + [""]
    return "\n".join(lines)


def _utilisation_line(runs: Sequence[tp.ThroughputRun]) -> str:
    """What the FLOP columns count, and why a cell has no MFU."""
    notes = sorted({r.mfu_note for r in runs if r.mfu is None and r.mfu_note and r.status == "success"})
    return ("GFLOP a sample: training FLOPs, 3x the forward's matmuls, convolutions and attention as FlopCounterMode "
            "counts them on the model's synthetic batch, less the weight gradients frozen weights skip (a LoRA base); "
            "TFLOP/s: the median throughput times that; MFU: TFLOP/s over "
            "the GPUs' dense peak for the cell's precision (docs/gpu_suite.md)."
            + (" MFU n/a: " + "; ".join(notes) + "." if notes else ""))


def _chart_line(name: str, charts: dict[str, bytes]) -> str:
    return f"![{CAPTIONS[name]}]({name})" if name in charts else ""


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


def _csv(header: list[str], rows: list[list[str]]) -> str:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows(rows)
    return text.getvalue()


def _replace(path: Path, data: Union[str, bytes]) -> Path:
    """Write the file in one step (harness.files.write_atomic): a reader, or the page's browser,
    never sees half a table, and a full disk is one line naming the file."""
    write_atomic(path, data, hint=WRITE_HINT)
    return path


CAPTIONS = {"scaling.png": "scaling efficiency", "precision.png": "precision gain",
            "fast_path.png": "fast path over eager"}


def _charts(scalings: Sequence[tp.Scaling], gains: Sequence[tp.PrecisionGain],
            fast: Sequence[tp.FastGain]) -> dict[str, bytes]:
    """Bar charts of the three views as PNG: scaling and precision one bar per model and series, the mean
    as a dashed line; fast path vs eager one bar per row of its table."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    charts = {}
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
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=110)
        plt.close(fig)
        charts[name] = png.getvalue()
    if fast:
        charts["fast_path.png"] = _fast_chart(fast, plt)
    return charts


def _fast_chart(fast: Sequence[tp.FastGain], plt) -> bytes:
    """One horizontal bar per model, GPUs and path, its ratio written at its end, coloured by path, with
    the eager step's 1.0 as a line: paths differ from model to model, so a bar per model and series
    would be mostly gaps."""
    paths = list(dict.fromkeys(f.path for f in fast))
    fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.32 * len(fast)))
    named: set[str] = set()  # each path once in the legend
    for y, f in enumerate(fast):
        ax.barh(y, f.ratio or 0.0, color=f"C{paths.index(f.path)}", label=None if f.path in named else f.path)
        named.add(f.path)
        if f.ratio is not None:
            ax.text(f.ratio, y, f" {f.ratio:.2f}x", va="center", fontsize=8)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(fast)), [f"{_name(f)}, {f.base}, {f.world_size} GPU(s)" for f in fast], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max((f.ratio or 0.0) for f in fast) * 1.15 + 0.05)
    ax.set_xlabel("fast path's throughput over the eager step's (1 = eager)")
    ax.legend(fontsize=7, title="path", title_fontsize=7)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    return png.getvalue()
