"""The round view (harness.rounds.view) as text or Markdown: one section per benchmark, a table per
division and availability category with its systems ranked; then scaling within system families, and
accelerator against accelerator. harness.report prints it before its other sections; the page
(harness.rounds.page) shows the same Markdown.

The round in a few lines (`render_summary`, `short_text`): per benchmark, the fastest system and the
fastest per accelerator, with one definition of "per accelerator" and the legend of the round's tables.
The round page opens with it and `harness.report ROUND --html FILE` prints it instead of the full tables.
Per accelerator means accelerator-minutes: accelerators x official score (minutes), fewest first. It is
read from the official score alone, so every scored system has it, in one unit for every submitter; the
tables' "throughput / accelerator" comes from the logs, whose submitters count samples differently, and
ranks nothing.

    python -m harness.report training_results_v3.1 --md round.md
    python -m harness.report training_results_v3.1 --html round.html
"""
from __future__ import annotations

from typing import Callable, Optional

from harness.results.read import submission
from harness.results.report import render
from harness.rounds.accelerators import AcceleratorPair
from harness.results.analysis.comparison import ALL
from harness.rounds.view import Across, Entry, RoundView
from harness.results.report.explain import family_text
from harness.results.analysis.confidence import Judgement, claims_more
from harness.results.report.verdicts import describe, ratio_range, score_note

SCALING = "Scaling within a system family"
ACCELERATORS = "Accelerator against accelerator (closed division, equal counts)"
HOW = ("ranked by the official score: the result summarizer's olympic mean of time to train (minutes), times "
       "the folder's scaling.json where the round applies it; each division and availability category "
       "apart, as MLPerf publishes them; accelerator-minutes = accelerators x score")


def _helpers(markdown: bool) -> tuple[Callable, Callable[[str], str], str]:
    table = render.markdown_table if markdown else render.text_table
    head = (lambda t: f"## {t}\n") if markdown else (lambda t: f"{t}\n{'=' * len(t)}")
    return table, head, "- " if markdown else "  "


def _n(x: Optional[float], spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _count(e: Entry) -> str:
    if e.accelerators == 0:
        return "0 (CPU)"
    return "n/a" if e.accelerators is None else f"{e.accelerators:,}"


def _energy(e: Entry) -> str:
    return "n/a" if e.energy_j is None else f"{e.energy_j / 3.6e6:.4g}"  # kWh


def _throughput(e: Entry) -> str:
    """'1,022 (d) samples/s', '0.0004084 epochs/s (d)', n/a."""
    x = e.throughput_per_accelerator
    if x is None:
        return "n/a"
    text = format(x, ",.0f") if x >= 100 else format(x, ".4g")
    return f"{text} {e.throughput_unit or ''}".rstrip() + (f" {render.DERIVED}" if e.throughput_derived else "")


def _accelerator(e: Entry) -> str:
    """The accelerator as the description writes it, with its chip where the name does not say it ('TPU (TPU v4)')."""
    name = e.accelerator or "n/a"
    return name if e.chip in name or e.chip in ("?", "CPU") else f"{name} ({e.chip})"


def entry_rows(entries: list[Entry], compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """The ranked table of one block; `compact` (the page) leaves out the framework and a scaling.json column
    that no row of the block fills."""
    energy = any(e.energy_j is not None or e.energy_note for e in entries)
    scaled = not compact or any(e.scaling != 1.0 for e in entries)
    header = ["rank", "score (min)", "accelerator", "count", "accelerator-minutes", "throughput / accelerator"]
    header += ["energy (kWh)"] * energy + ["submitter", "system"] + ["framework"] * (not compact) + ["runs counted"]
    header += ["scaling.json"] * scaled
    rows = []
    for e in entries:
        rows.append([
            "-" if e.rank is None else str(e.rank), _n(e.minutes, ".3f") if e.minutes is not None else "void",
            _accelerator(e), _count(e), _n(e.accelerator_minutes, ",.0f"), _throughput(e)]
            + [_energy(e)] * energy + [e.submitter, e.system] + [e.framework or "n/a"] * (not compact)
            + [f"{e.counted}/{e.runs}"] + ["" if e.scaling == 1.0 else f"x{e.scaling:.4g}"] * scaled)
    return header, rows


def scaling_rows(view: RoundView) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "family (submitter/system line (chip))", "accelerators", "speedup", "95% interval",
              "speedup / count ratio", "accelerator-minutes (more / fewer)", "one system family"]
    rows = []
    for s in view.scaling:
        rows.append([s.benchmark, s.system, f"{s.world:,} vs {s.baseline_world:,}", render.times(s.time_to_train),
                     render.interval(s.confidence), render.fmt(s.time_to_train and s.time_to_train / s.gpu_ratio, ".0%"),
                     _cost(s.time_to_train, s.gpu_ratio), render.family_cell(s.family)])
    return header, rows


def _cost(speedup: Optional[float], gpus: float) -> str:
    """The accelerator-minutes of the larger system against the smaller's: 1.00x is free scaling."""
    return "n/a" if not speedup else f"{gpus / speedup:.2f}x"


def accelerator_rows(pairs: list[AcceleratorPair]) -> tuple[list[str], list[list[str]]]:
    header = ["A vs B", "benchmark", "round", "category", "count", "A's system", "A (min)", "B's system", "B (min)",
              "A's speedup", "95% interval", "verdict"]
    unlike = any(p.unlike for p in pairs)
    header += ["like for like"] * unlike
    return header, [[f"{p.a} vs {p.b}", p.benchmark, p.round, p.category, f"{p.accelerators:,}", p.a_system,
                     f"{p.a_minutes:.3f}", p.b_system, f"{p.b_minutes:.3f}", render.times(p.time_to_train),
                     "n/a" if p.interval is None else ratio_range(p.interval), p.verdict]
                    + [f"no: {p.unlike}" if p.unlike else "yes"] * unlike for p in pairs]


def geomean_rows(view: RoundView) -> tuple[list[str], list[list[str]]]:
    cats = [c for c in dict.fromkeys(m.category for m in view.means) if c != ALL] + [ALL]
    header = ["A vs B", "rows"] + [f"geomean {c}" for c in cats]
    rows = []
    for a, b in dict.fromkeys((m.a, m.b) for m in view.means):
        ms = {m.category: m for m in view.means if (m.a, m.b) == (a, b)}
        n = f"{ms[ALL].n} ({ms[ALL].unlike} unlike)" if ms[ALL].unlike else str(ms[ALL].n)
        rows.append([f"{a} vs {b}", n] + [render.times(ms[c].value) if c in ms else "" for c in cats])
    return header, rows


def render_round(view: RoundView, markdown: bool = False, compact: bool = False) -> str:
    """Every section of the round view (`compact`: the page's tables, entry_rows)."""
    table, head, bullet = _helpers(markdown)
    out = [head("Round: systems ranked per benchmark"), f"{bullet}{HOW}",
           f"{bullet}benchmarks: {', '.join(view.benchmarks)}", ""]
    for bench in view.benchmarks:
        out += [head(bench)]
        for b, round_, division, category, rows in view.blocks():
            if b != bench:
                continue
            short = submission.SHORT.get(category, category)
            out += [f"{round_}, {division} division, {short}: {sum(1 for e in rows if e.rank)} ranked of {len(rows)}",
                    "",
                    table(*entry_rows(rows, compact)), ""]
        notes = [f"{e.submitter}/{e.system}: {score_note(e.score)}" for e in view.entries if e.benchmark == bench and e.minutes is None]
        notes += [f"{e.submitter}/{e.system}: {throughput_note(e)}" for e in view.entries
                  if e.benchmark == bench and e.implied_samples is not None]
        notes += [f"{e.submitter}/{e.system}: energy: {e.energy_note}" for e in view.entries
                  if e.benchmark == bench and e.energy_note]
        out += [bullet + n for n in notes] + ([""] if notes else [])
    out += scaling_section(view, markdown) + accelerator_section(view, markdown)
    return "\n".join(out).rstrip("\n") + "\n"


def scaling_section(view: RoundView, markdown: bool) -> list[str]:
    table, head, bullet = _helpers(markdown)
    out = [head(SCALING),
           f"{bullet}a speedup over accelerator counts pairs systems of one submitter and division; it is scaling "
           "when they are one system family: one system line (the system's name without its node or accelerator "
           "count), one accelerator model and one framework (docs/report.md); any other pair is marked NO, with "
           "what differs; two submitters' systems are never paired", ""]
    if view.scaling:
        out += [table(*scaling_rows(view)), ""]
        out += [f"{bullet}{s.benchmark} {s.system} {s.world:,} vs {s.baseline_world:,}: {family_text(s.family)}"
                for s in view.scaling if s.family is not None and not s.family.vouched]
        out += [bullet + n for n in interval_notes(
            [(f"{s.benchmark} {s.system} {s.world:,} vs {s.baseline_world:,}", s.confidence) for s in view.scaling])]
    else:
        out.append(f"{bullet}no submitter has one benchmark at two accelerator counts")
    out += [bullet + across_line(a) for a in view.across]
    return out + [""]


def across_line(a: Across) -> str:
    """'gnmt, v0.7, closed, A100: 2 systems of 2 submitters at 8-16 accelerators: a ratio ... is not given; ...'."""
    return (f"{a.benchmark}, {a.round}, {a.division}, {a.chip}: {a.systems} systems of {a.submitters} submitters at "
            f"{a.counts[0]:,}-{a.counts[1]:,} accelerators: a ratio between two submitters' systems is not "
            "scaling, and is not given; the scaling table pairs one submitter's systems only")


def throughput_note(e: Entry) -> Optional[str]:
    """Why an entry's throughput per accelerator is not shown (harness.rounds.view._plausible); None
    where it is."""
    if e.implied_samples is None:
        return None
    return (f"throughput per accelerator not shown: with its score it implies {e.implied_samples:.3g}x the samples "
            "the benchmark's median system trains on")


def accelerator_section(view: RoundView, markdown: bool) -> list[str]:
    table, head, bullet = _helpers(markdown)
    if not view.accelerators:
        return []
    return [head(ACCELERATORS),
            f"{bullet}per benchmark and accelerator count, each chip's fastest closed-division result; A's speedup = "
            "B's score / A's score, with the 95% interval over both systems' runs; A is the chip faster overall; a row "
            "whose systems differ beyond the chip (form factor, nodes x accelerators per node) says so and is counted "
            "as unlike",
            "", table(*geomean_rows(view)), "", table(*accelerator_rows(view.accelerators)), ""] + [
        bullet + n for n in interval_notes([(f"{p.a} vs {p.b}, {p.benchmark} {p.round}, {p.accelerators:,}",
                                             p.judgement) for p in view.accelerators])] + [""] * any(
        interval_notes([("", p.judgement) for p in view.accelerators]))


def interval_notes(rows: list[tuple[str, Optional[Judgement]]]) -> list[str]:
    """The whole verdict in words for each row whose table cells alone would puzzle: an open interval bound
    ('0x-1.55x': resamples that void a side's score), or a p under 0.05 held back by an interval that holds 1x."""
    out = []
    for label, j in rows:
        iv = None if j is None else j.time_interval
        if j is not None and iv is not None and (iv.low is None or iv.high is None or claims_more(j.p_value, iv)):
            out.append(f"{label}: {describe(j)}")
    return out


SUMMARY = "Summary: the fastest system and the fastest per accelerator"
PER_ACCELERATOR = ("per accelerator = accelerator-minutes: accelerators x official score (minutes), fewest first: "
                   "what one result costs in accelerator time (8 accelerators for 60 minutes = 480), from the score "
                   "alone")
LEGEND = [
    "fastest = the lowest official score (minutes): the result summarizer's olympic mean of time to train",
    PER_ACCELERATOR,
    "closed division only (the open division changes the model); every availability category, each winner's named",
    f"{render.DERIVED} = throughput derived from the log's epoch intervals (the log states none); "
    "throughput / accelerator is read from the logs, whose submitters count samples differently, and ranks nothing",
    "n/a = not stated or not comparable (the notes under each benchmark say why); void = no official score",
]


def _who(e: Entry) -> str:
    short = submission.SHORT.get(e.availability, e.availability)
    count = f"{e.accelerators:,} x {e.chip}" if e.accelerators else e.chip
    return f"{e.submitter}/{e.system} ({count}, {short})"


def winners(view: RoundView) -> list[tuple[str, str, Entry, Entry, int]]:
    """(benchmark, round, fastest, fewest accelerator-minutes, systems scored) per benchmark and round, closed
    division only; of systems tied, the first in the ranking (summary_rows names them all)."""
    out: dict[tuple[str, str], list[Entry]] = {}
    for e in view.entries:
        if e.division == "closed" and e.minutes is not None:
            out.setdefault((e.benchmark, e.round), []).append(e)
    rows = []
    for (bench, round_), members in out.items():
        fastest = min(members, key=lambda e: e.minutes or 0.0)
        priced = [e for e in members if e.accelerator_minutes is not None]
        cheapest = min(priced, key=lambda e: e.accelerator_minutes or 0.0) if priced else fastest
        rows.append((bench, round_, fastest, cheapest, len(members)))
    return rows


def summary_rows(view: RoundView) -> tuple[list[str], list[list[str]]]:
    header = ["benchmark", "round", "systems", "fastest (score, min)", "fastest per accelerator (accelerator-minutes)"]
    rows = []
    for bench, round_, fastest, cheapest, n in winners(view):
        per = "n/a" if cheapest.accelerator_minutes is None else f"{cheapest.accelerator_minutes:,.0f}"
        rows.append([bench, round_, str(n), f"{fastest.minutes:.3f}: {_tied(view, fastest, 'minutes')}",
                     f"{per}: {_tied(view, cheapest, 'accelerator_minutes')}"])
    return header, rows


def _tied(view: RoundView, best: Entry, figure: str) -> str:
    """The winner, and every closed system of its benchmark and round with the same figure: a tie is named whole."""
    ties = [e for e in view.entries if e.benchmark == best.benchmark and e.round == best.round
            and e.division == "closed" and getattr(e, figure) == getattr(best, figure)]
    return ", ".join(_who(e) for e in ties) + (" (tied)" if len(ties) > 1 else "")


def render_summary(view: RoundView, markdown: bool = False, legend: bool = True) -> str:
    """The summary table and its legend."""
    table = render.markdown_table if markdown else render.text_table
    head = f"## {SUMMARY}\n" if markdown else f"{SUMMARY}\n{'=' * len(SUMMARY)}"
    bullet = "- " if markdown else "  "
    header, rows = summary_rows(view)
    out = [head, table(header, rows) if rows else f"{bullet}no closed-division system has an official score", ""]
    if legend:
        out += [bullet + line for line in LEGEND] + [""]
    return "\n".join(out)


def short_text(view: Optional[RoundView]) -> Optional[str]:
    """What the terminal shows when the tables went to a page: the summary and its legend."""
    return None if view is None else render_summary(view)
