"""A published round as a GPU buyer reads it: per benchmark, the systems ranked by their official score,
divisions and availability categories apart, with what each system is and what its result costs in
accelerator time; scaling within each system family; and accelerator against accelerator.

Built from a report of any folder of submissions (a whole `training_results_vX.Y`, one organisation's
folder, or a few system folders): every submission folder's group is one entry.

- score: the folder's official score, exactly as the report scores it (harness.results.analysis.score: the result
  summarizer's olympic mean of the runs its checker passes, times scaling.json where the round reads it);
- rank: within one benchmark, division and availability category (MLPerf publishes them apart), fastest
  first; a void score is listed after the ranked ones with its reason;
- accelerator-minutes = accelerators x score minutes: what a result costs in accelerator time, so that
  512 GPUs in 5 minutes and 8 GPUs in 120 minutes compare (2,560 against 960);
- throughput per accelerator: the folder's mean throughput (logged, or derived from the epoch intervals
  and marked so) over its accelerators, in the logs' unit;
- energy: the summarizer's energy score where the folder published power results (harness.results.read.submission);
- scaling: the report's speedups between a submitter's systems (harness.results.analysis.speedups and lineage),
  each said to be one system family or not; counts of different submitters are never paired, and
  `across` says, per benchmark and chip, how many systems and submitters that leaves unpaired;
- accelerators: harness.rounds.accelerators.

    python -m harness.report training_results_v3.1 --md round.md --json round.json --html round.html
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness.results.read import submission

from harness.results.analysis import lineage
from harness.rounds.accelerators import AcceleratorPair, GeoMean, compare_accelerators, shape
from harness.results.analysis.speedups import Speedup
from harness.results.analysis.score import Score
from harness.results.analysis.stats import GroupKey, accelerator_kind

# reinforcement learning: an epoch is a generation of self-play whose games grow with the system, so epochs a second
# over accelerators measures no chip (v0.7 minigo: 8x apart between 8 and 1,792 A100s); not given
NO_EPOCH_WORK = ("minigo",)
OFF_BY = 5.0  # throughput per accelerator this many times off its score's samples is not shown (_plausible)


@dataclass(frozen=True)
class Entry:
    benchmark: str
    division: str
    availability: str  # MLPerf's category (submission.ORDER), or the status as written
    status: Optional[str]  # the system description's status, as written
    org: str  # the organisation's folder
    submitter: str
    system: str  # the system folder
    system_name: Optional[str]  # the description's system_name
    accelerator: Optional[str]
    chip: str  # the accelerator's chip (H100, A100, TPU v5e), for comparisons
    accelerators: Optional[int]
    framework: Optional[str]
    minutes: Optional[float]  # the official score; None when void
    unscaled: Optional[float]
    scaling: float
    runs: int
    counted: int
    required: Optional[int]
    score: Score  # what the score stands on (harness.results.report.verdicts.score_note says it)
    rank: Optional[int]
    accelerator_minutes: Optional[float]
    throughput_per_accelerator: Optional[float]
    throughput_unit: Optional[str]
    throughput_derived: bool
    energy_j: Optional[float]
    energy_note: Optional[str]
    rounds: tuple[str, ...]
    round: str  # the MLPerf round its logs come from: results of two rounds are never ranked together
    folder: str
    key: GroupKey = field(compare=False, repr=False)
    nodes: Optional[int] = None  # the description's number_of_nodes
    form: Optional[str] = None  # the accelerator's form factor: SXM, PCIe, OAM, NVL, superchip (form_factor)
    # throughput per accelerator not shown: the samples it implies with the score, as a multiple of the benchmark's
    # median system's (harness.rounds.text.throughput_note says it)
    implied_samples: Optional[float] = None

    @property
    def shape(self) -> str:
        return shape(self)  # harness.rounds.accelerators.shape


@dataclass(frozen=True)
class Across:
    """Systems of several submitters with one benchmark, division and chip at several counts: their ratios
    are not scaling, and are not given (the words: harness.rounds.text.across_line)."""

    benchmark: str
    round: str
    division: str
    chip: str
    systems: int
    submitters: int
    counts: tuple[int, int]  # the fewest and the most accelerators


@dataclass
class RoundView:
    entries: list[Entry]  # by benchmark, division, category, rank
    scaling: list[Speedup]  # tree pairs of one submitter, each marked one system family or not
    across: list[Across]  # per benchmark and chip: systems of several submitters that are not paired
    accelerators: list[AcceleratorPair] = field(default_factory=list)
    means: list[GeoMean] = field(default_factory=list)

    @property
    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys(e.benchmark for e in self.entries))

    def blocks(self) -> list[tuple[str, str, str, str, list[Entry]]]:
        """(benchmark, round, division, category, its entries): the tables of the round, in MLPerf's order."""
        out: dict[tuple[str, str, str, str], list[Entry]] = {}
        for e in self.entries:
            out.setdefault((e.benchmark, e.round, e.division, e.availability), []).append(e)
        return [(b, r, d, a, rows) for (b, r, d, a), rows in out.items()]


def _division(key: GroupKey) -> str:
    return lineage.division_of(key)


def _entry(report: Any, key: GroupKey) -> Entry:
    g = next(s for s in report.stats if s.key == key)
    score = report.scores[key]
    runs = report.groups[key]
    folder = str(key.folder)
    found = submission.listing(folder)
    parts = Path(folder).parts
    world = key.world if key.world else None
    energy, energy_note = None, None
    if submission.has_power(folder):
        energy, energy_note = submission.folder_energy(folder, runs, key.benchmark, score.scaling)
    tput = g.throughput.mean if key.benchmark not in NO_EPOCH_WORK else None
    return Entry(
        key.benchmark, _division(key), found.availability, found.status, parts[-4] if len(parts) >= 4 else "?",
        found.submitter, parts[-2] if len(parts) >= 2 else "?", found.system_name, key.accelerator,
        accelerator_kind(key.accelerator, key.platform), key.world, key.framework, score.minutes, score.unscaled,
        score.scaling, score.runs, sum(1 for r in runs if r.counted), score.required, score, None,
        world * score.minutes if world and score.minutes is not None else None,
        tput / world if tput is not None and world else None, g.throughput_unit, g.throughput_derived,
        energy, energy_note, tuple(g.rounds), "+".join(g.rounds) or "n/a", folder, key,
        nodes=found.nodes if found.nodes else (1 if world and found.per_node == world else None),
        form=form_factor(key.accelerator, accelerator_kind(key.accelerator, key.platform)))


# cards sold in one form only, whose names write none: PCIe boards (workstation, inference and gaming cards)
PCIE_ONLY = re.compile(r"^(?:L4|L40S?|A2|A10G?|A16|A30|A40|T4)$|RTX|GEFORCE|RADEON", re.I)


def form_factor(accelerator: Optional[str], chip: Optional[str] = None) -> Optional[str]:
    """'SXM', 'PCIe', 'OAM' or 'NVL' where the accelerator's name writes one ('NVIDIA A100-PCIe-40GB');
    'superchip' for a Grace superchip (GB200, GB300, GH200: a CPU and GPUs on one board, NVLink-C2C between
    them, racked as NVL72 or NVL4), whose name writes no form; 'PCIe' for a card made in that form alone
    (PCIE_ONLY: L40S, RTX 4090); else None (a TPU, an unnamed form)."""
    name = accelerator or ""
    if re.search(r"\bG[BH]\d{3}", f"{name} {chip or ''}", re.I):
        return "superchip"
    # NVL not followed by a count: H200 NVL is a PCIe card, while 'NVL72' names a superchip's rack
    m = re.search(r"(SXM|PCIE|OAM|NVL(?!\d))", name.upper())
    if m is not None:
        return {"PCIE": "PCIe"}.get(m.group(1), m.group(1))
    return "PCIe" if PCIE_ONLY.search(chip or accelerator_kind(accelerator)) or PCIE_ONLY.search(name) else None


def _plausible(entries: list[Entry]) -> list[Entry]:
    """Throughput per accelerator only where it agrees with the score: within one benchmark and unit,
    throughput x accelerators x minutes (the samples a run trains on) varies with convergence, by a
    few times at most; a figure more than OFF_BY times from the benchmark's median comes from a log whose
    epoch or block counts are not what the derivation reads (a BERT log counting samples as epochs) and is
    not shown."""
    from dataclasses import replace

    work: dict[tuple, list[float]] = {}
    for e in entries:
        if e.throughput_per_accelerator and e.accelerator_minutes:
            work.setdefault((e.benchmark, e.round, e.throughput_unit), []).append(
                e.throughput_per_accelerator * e.accelerator_minutes)
    out = []
    for e in entries:
        done = work.get((e.benchmark, e.round, e.throughput_unit), [])
        if e.throughput_per_accelerator and e.accelerator_minutes and len(done) >= 3:
            ratio = e.throughput_per_accelerator * e.accelerator_minutes / statistics.median(done)
            if not 1 / OFF_BY <= ratio <= OFF_BY:
                e = replace(e, throughput_per_accelerator=None, implied_samples=ratio)
        out.append(e)
    return out


def _order(e: Entry) -> tuple:
    return (e.benchmark, e.round, e.division != "closed", e.division, submission.order(e.availability), e.availability,
            e.minutes is None, e.minutes or 0.0, e.org, e.system)


def _ranked(entries: list[Entry]) -> list[Entry]:
    from dataclasses import replace

    out, seen, rank, block, last = [], 0, 0, None, None
    for e in sorted(entries, key=_order):
        here = (e.benchmark, e.round, e.division, e.availability)
        if here != block:
            seen, rank, block, last = 0, 0, here, None
        if e.minutes is None:
            out.append(e)
            continue
        seen += 1
        if e.minutes != last:  # equal scores share a rank, and the next one skips (1, 2, 2, 4)
            rank, last = seen, e.minutes
        out.append(replace(e, rank=rank))
    return out


def across_submitters(entries: list[Entry]) -> list[Across]:
    """Per benchmark, division and chip with systems of several submitters at several counts: their
    ratios are not scaling, and so not given."""
    by: dict[tuple[str, str, str, str], list[Entry]] = {}
    for e in entries:
        if e.accelerators:
            by.setdefault((e.benchmark, e.round, e.division, e.chip), []).append(e)
    out = []
    for (bench, round_, division, chip), members in by.items():
        submitters = sorted({e.submitter for e in members})
        counts = sorted({e.accelerators or 0 for e in members})
        if len(submitters) < 2 or len(counts) < 2:
            continue
        out.append(Across(bench, round_, division, chip, len(members), len(submitters), (counts[0], counts[-1])))
    return out


def view(report: Any, judge: bool = True) -> Optional[RoundView]:
    """The round view of a report, or None when none of its groups comes from a submission tree."""
    keys = [g.key for g in report.stats if g.key.folder is not None]
    if not keys:
        return None
    entries = _ranked(_plausible([_entry(report, k) for k in keys]))
    scaling = [s for s in report.speedups if s.family is not None]
    pairs, means = compare_accelerators(entries, report.groups, judge=judge)
    return RoundView(entries, scaling, across_submitters(entries), pairs, means)


def of(report: Any) -> Optional[RoundView]:
    """The report's round view, computed once (the text, the JSON and the page all show it)."""
    cached = report.__dict__.get("_round_view", _MISSING)
    if cached is _MISSING:
        cached = view(report)
        report.__dict__["_round_view"] = cached
    return cached


_MISSING = object()
