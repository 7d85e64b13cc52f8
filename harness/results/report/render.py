"""The report's tables as plain text (the terminal) or Markdown, from one set of rows."""
from __future__ import annotations

from collections.abc import Mapping
import os
from pathlib import Path
from typing import Any, Optional

from harness.results.analysis.speedups import PrecisionRatio, Speedup, count_label
from harness.results.analysis.confidence import INPUT_BOUND, input_bound
from harness.results.report.explain import summary
from harness.results.analysis.lineage import Kinship
from harness.results.analysis.score import Score
from harness.results.analysis.stats import BUSY, GroupStats, RCPVerdict, key_cells
from harness.results.read.summary import RunSummary, one_line
from harness.results.report.explain import describe_attribution
from harness.results.report.explain import family_text
from harness.results.report.verdicts import score_note
from harness.results.report.verdicts import INPUT_BOUND_TEXT, ratio_number, ratio_range

UNSCORABLE, DERIVED = "*", "(d)"
INPUT_BOUND_MARK = "input-bound"


def fmt(value: Optional[float], spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def rel(path: str) -> str:
    try:  # realpath, not resolve(): a link that loops (a log linked to itself) is named, not raised on
        return str(Path(os.path.realpath(path)).relative_to(Path.cwd()))
    except ValueError:
        return path


def quality(value: Any) -> str:
    """0.2435, or BBOX=0.3801 SEGM=0.3412 for a quality of named parts."""
    if value is None:
        return "n/a"
    if isinstance(value, Mapping):
        return " ".join(f"{k}={quality(v)}" for k, v in value.items())
    return format(value, ".4g") if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def throughput(value: Optional[float], unit: Optional[str] = None, derived: bool = False) -> str:
    if value is None:
        return "n/a"
    text = format(value, ",.0f") if value >= 100 else format(value, ".4g")
    if unit == "epochs/s":
        text += " epochs"
    return text + (f" {DERIVED}" if derived else "")


def run_rows(runs: list[RunSummary]) -> tuple[list[str], list[list[str]]]:
    # the hardware columns appear once any run names its accelerator (a harness run, or a log in a
    # submission tree); a run without telemetry (no NVML, a CPU run, an official log) shows n/a there
    hardware = any(r.accelerator or r.energy_j is not None or r.power_w is not None for r in runs)
    waits = any(r.data_wait_share is not None for r in runs)  # result.json's data wait (harness runs)
    header = ["benchmark", "status", "ttt_s", "ttt_min", "epochs", "throughput/s", "seed", "world", "precision"]
    header += ["gpu", "energy_kJ", "power_W"] * hardware + ["data wait"] * waits + ["quality", "round", "log"]
    rows = []
    for r in runs:
        marks = ("" if r.scorable else UNSCORABLE) + (BUSY if r.busy else "")
        row = [
            r.benchmark or "?", r.status + marks, fmt(r.time_to_train_s, ".1f"),
            fmt(r.time_to_train_min, ".4f"), _epochs(r),
            throughput(r.throughput, r.throughput_unit, r.throughput_derived),
            "n/a" if r.seed is None else str(r.seed), "n/a" if r.world_size is None else str(r.world_size),
            r.precision or "n/a",
        ]
        if hardware:
            row += [r.accelerator or "n/a", fmt(None if r.energy_j is None else r.energy_j / 1000, ".3g"),
                    fmt(r.power_w, ".0f")]
        if waits:
            row.append(data_wait(r.data_wait_share))
        rows.append(row + [quality(r.final_quality), r.round or "n/a", rel(r.path)])
    return header, rows


def data_wait(share: Optional[float]) -> str:
    """'3%', or '12% INPUT-BOUND' over the 5% at which a run's numbers measure its loader."""
    if share is None:
        return "n/a"
    return f"{share:.0%}" + (f" {INPUT_BOUND_MARK}" if input_bound(share) else "")


def _epochs(r: RunSummary) -> str:
    """Epochs to converge; a model evaluated every N samples counts samples instead (steps: stable diffusion
    under 3.1.0), as the RCP checker reads it."""
    if r.epochs_to_converge is None or r.epoch_unit not in ("samples", "steps", "tokens"):
        return fmt(r.epochs_to_converge, "g")
    return f"{r.epochs_to_converge:,.0f} {r.epoch_unit}"


def run_footnotes(runs: list[RunSummary]) -> list[str]:
    notes = []
    if any(not r.scorable for r in runs):
        notes.append(f"{UNSCORABLE} has a problem (listed on stderr): not scorable as it stands")
    if any(r.busy for r in runs):
        notes.append(f"{BUSY} the machine was busy: other processes used at least half a core during the run "
                     "(result.json host_load); still scored, but its time to train measures its neighbours too")
    if any(input_bound(r.data_wait_share) for r in runs):
        notes.append(f"{INPUT_BOUND_MARK}: data wait over {INPUT_BOUND:.0%} of training time (result.json "
                     f"data_wait_share): {INPUT_BOUND_TEXT.split(': ', 1)[1]}")
    if any(r.throughput_derived for r in runs):
        notes.append(f"{DERIVED} throughput derived from the log's epoch intervals: samples per second of training "
                     "(samples of an epoch x epochs / epoch seconds, or steps x global batch / step-block seconds), or "
                     "epochs per second where the log counts no samples")
    return notes


def group_rows(stats: list[GroupStats], scores: dict[Any, Score]) -> tuple[list[str], list[list[str]]]:
    systems = any(g.key.accelerator or g.key.framework for g in stats)
    header = ["benchmark", "platform", "world", "precision", "batch"] + ["accelerator", "framework"] * systems
    header += ["runs", "conv", "score_min", "runs/req", "ttt_min mean/median/std/min/max",
               "epochs mean/olympic/std/min/max", "epochs: runs", "throughput/s mean (std)", "init_s"]
    # energy columns for harness runs (their accelerator comes from result.json; a tree's system file names a framework)
    energy = any(g.energy_j.n or g.power_w.n or (g.accelerators and not g.key.framework) for g in stats)
    header += ["energy_kJ mean (std)", "power_W mean"] * energy
    rows = []
    for g in stats:
        s = scores[g.key]
        req = f"{s.runs}/{s.required} {'yes' if s.count_ok else 'no'}" if s.required else f"{s.runs}/?"
        t, e, tp = g.time_to_train_min, g.epochs, g.throughput
        tput = throughput(tp.mean, g.throughput_unit, g.throughput_derived)
        rows.append(key_cells(g.key, systems) + [
            str(g.runs), str(g.converged), fmt(s.minutes, ".4f"), req,
            "/".join(fmt(x, ".4g") for x in (t.mean, t.median, t.std, t.min, t.max)),
            "/".join(fmt(x, ".3g") for x in (e.mean, e.olympic_mean, e.std, e.min, e.max)),
            summary(e.counts),
            f"{tput} ({fmt(tp.std, ',.0f' if (tp.std or 0) >= 100 else '.2g')})", fmt(g.init_time_s.mean, ".1f"),
        ])
        if energy:
            kj = [None if x is None else x / 1000 for x in (g.energy_j.mean, g.energy_j.std)]
            rows[-1] += ["n/a" if kj[0] is None else f"{fmt(kj[0], '.3g')} ({fmt(kj[1], '.2g')})",
                         fmt(g.power_w.mean, ".0f")]
    return header, rows


def score_notes(stats: list[GroupStats], scores: dict[Any, Score]) -> list[str]:
    return [f"{' '.join(key_cells(g.key))}: {score_note(scores[g.key])} [{scores[g.key].rule}]" for g in stats]


def times(value: Optional[float]) -> str:
    """'2.37x', or n/a (never 'n/ax')."""
    return "n/a" if value is None else f"{ratio_number(value)}x"


def interval(conf: Any, what: str = "time") -> str:
    """A judgement's 95% interval as '2.31x-2.42x', or n/a."""
    iv = None if conf is None else getattr(conf, "time_interval" if what == "time" else f"{what}_interval")
    return "n/a" if iv is None else ratio_range(iv)


def verdict_word(conf: Any) -> str:
    if conf is None:
        return "n/a"
    word = {"faster": f"{conf.subject} faster", "slower": f"{conf.reference} faster"}.get(conf.verdict, conf.verdict)
    return word + (" (input-bound)" if conf.input_bound else "")


def speedup_rows(speedups: list[Speedup]) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "system", "precision", "GPUs", "ttt speedup", "ttt 95% interval", "= throughput", "x epochs",
              "x rest", "efficiency", "RCP vs baseline", "verdict"]
    trees = any(s.family is not None for s in speedups)  # submission trees: is each pair one system family
    header += ["one system family"] * trees
    rows = []
    for s in speedups:
        tput = times(s.throughput) + (" (implied)" if s.throughput_implied and s.throughput is not None else "")
        rows.append([
            s.benchmark, s.system, s.precision or "n/a", f"{s.world} vs {s.baseline_world}",
            times(s.time_to_train), interval(s.confidence), tput, times(s.epochs_ratio), times(s.rest),
            fmt(s.efficiency, ".0%"), "n/a (too few runs)" if s.rcp is None else ("pass" if s.rcp.passed else "FAIL"),
            verdict_word(s.confidence),
        ] + [family_cell(s.family)] * trees)
    return header, rows


def family_cell(family: Optional[Kinship]) -> str:
    """'yes', or 'NO (see notes)' for a pair the family rule cannot vouch for (harness.results.analysis.lineage)."""
    if family is None:
        return "n/a"
    return "yes" if family.vouched else "NO (see notes)"


def speedup_notes(speedups: list[Speedup]) -> list[str]:
    notes = []
    for s in speedups:
        where = f"{s.benchmark} {s.system} {s.precision or ''} {s.world} vs {count_label(s.baseline_world, s.system)}"
        if s.family is not None and not s.family.vouched:
            notes.append(f"{where}: {family_text(s.family)}: a ratio between them is not scaling of one system")
        why = describe_attribution(s.attribution)
        if why:
            notes.append(f"{where}: {why}")
        if s.rcp is not None:
            notes.append(f"{where}: RCP {describe_rcp(s.rcp)}")
    return notes


def describe_rcp(v: RCPVerdict) -> str:
    """'pass: olympic mean 6.12 epochs >= 3.9, ...' or 'fail: ...': the RCP checker's verdict on a group's epochs."""
    if v.passed:
        return (f"pass: olympic mean {v.group_mean:.3g} epochs >= {v.min_acceptable_mean:.3g}, "
                f"the fastest a group may converge next to the reference's {v.reference_mean:.3g} "
                f"(std {v.reference_std:.3g})")
    return (f"fail: olympic mean {v.group_mean:.3g} epochs < {v.min_acceptable_mean:.3g}: significantly "
            f"faster than the reference's {v.reference_mean:.3g} (std {v.reference_std:.3g}, one-sided "
            "t-test at 0.05)")


def precision_rows(ratios: list[PrecisionRatio]) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "system", "world", "precision", "vs", "throughput ratio", "throughput 95% interval",
              "ttt ratio", "ttt 95% interval", "epochs ratio", "verdict"]
    return header, [[r.benchmark, r.system, "n/a" if r.world is None else str(r.world), r.precision,
                     r.baseline_precision, times(r.throughput), interval(r.confidence, "throughput"),
                     times(r.time_to_train), interval(r.confidence), times(r.epochs_ratio),
                     verdict_word(r.confidence)] for r in ratios]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    rows = [[one_line(c) for c in r] for r in rows]  # a folder's name may hold a newline too
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda c: one_line(c).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
