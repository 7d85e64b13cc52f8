"""What a submission tree says besides its logs' figures: who submitted each system and in which of MLPerf's
availability categories, the energy to train where the round published power, and the round of a published
log kept outside its round's folder, read from the log itself.

Availability (`listing`): MLPerf publishes each round's results split by division and then by availability: "Available
on-premise", "Available cloud", "Preview" and "Research, Development, or Internal (RDI)", the four values
mlperf_logging's system_desc_checker accepts in a system description's `status` from 4.0 on. Earlier
descriptions write it freely (`onprem`, `Available on premise`, `cloud`, `available`, `research`): each is
read into its category by its words, and a status no word matches is kept as written. The submitter is
the description's `submitter` (`NVIDIA+CoreWeave` in NVIDIA's folder), else the organisation's folder.

    python -m harness.check.show submitters BENCHMARK_FOLDER...   # each system's submitter and category

Energy to train (`folder_energy`), where a round published power: a benchmark folder's `power/result_<i>/node_*.txt` (and
`sw_*.txt`, the interconnect's estimate) beside its result files, MLPerf's power measurement from v4.0 on.

The figure is the result summarizer's, computed by its own functions: each run's energy
(`_compute_total_power`: every node's power readings integrated over its measurement window, scaled to
the run's time to train, times the conversion efficiency, plus the switches' estimate; joules), then the
olympic mean of the runs that count, ordered by their time to train (`_index_olympic_average`), times
the folder's scaling.json factor, as the summarizer scores a folder that has power results.

    python -m harness.report training_results_v4.0 --json r.json      # round.entries[].energy_j

The round of a log (`choose`): Without a `vX.Y` folder on the way to it (and without --ruleset), an official log used to be checked
against the newest ruleset that has its benchmark: a v0.7 SSD-ResNet34 log against 4.1.0's RetinaNet
rules, rejected, its run voided. Among the rulesets that have the benchmark, the log's own evidence
chooses, in this order, and the choice says which evidence it was:

1. its dates: the round whose window holds the run's start (a round's window runs from the previous
   round's publication to its own: its runs were made before its results were published), where that
   round's ruleset has the benchmark and passes the log;
2. its keys: the one ruleset whose rules pass the log (the official checker's verdict under each); where
   several pass, the one nearest the round of its dates (else the newest); where the dates' round has
   the benchmark and none passes, that round's;
3. else, as before, the newest ruleset with the benchmark, saying the round was not known.

`--ruleset` still decides over all of this. Only MLLOG logs (v0.7 on) are read this way: :::MLL is
v0.6's and :::MLPv0.5.0 v0.5's by their format.

    python -c "from harness.results.read.submission import window_of; print(window_of(1593019143723))"
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.results.read import official, rules
from harness.results.read.formats import loads
from harness.results.read.runfiles import read_text
from harness.results.read.rules import Ruleset
from harness.results.read.summary import PASS, RunSummary, one_line


# The day each MLPerf Training round's results were published (mlcommons.org); a round's window ends
# there and starts at the previous one's. A run after the last date falls in no known window.
PUBLISHED = (("v0.6", "2019-07-10"), ("v0.7", "2020-07-29"), ("v1.0", "2021-06-30"), ("v1.1", "2021-12-01"),
             ("v2.0", "2022-06-29"), ("v2.1", "2022-11-09"), ("v3.0", "2023-06-27"), ("v3.1", "2023-11-08"),
             ("v4.0", "2024-06-12"), ("v4.1", "2024-11-13"), ("v5.0", "2025-06-04"), ("v5.1", "2025-11-12"))


def window_of(start_ms: Optional[float]) -> Optional[tuple[str, str, str]]:
    """(round, first day, last day) of the window that holds a run started at `start_ms` (ms since 1970)."""
    if start_ms is None or not start_ms > 0:
        return None
    try:
        day = datetime.datetime.fromtimestamp(start_ms / 1000, datetime.timezone.utc).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return None
    previous = PUBLISHED[0][1]
    for round_, published in PUBLISHED[1:]:
        if previous < day <= published:
            return round_, previous, published
        previous = published
    return None


def choose(benchmark: Optional[str], lines: Sequence[str], start_ms: Optional[float], *,
           explicit: Optional[str] = None, path_round: Optional[str] = None, log_format: Optional[str] = None,
           harness_run: bool = False, seconds_based: bool = False) -> Ruleset:
    """rules.choose, with the log's own evidence where it would otherwise take the newest ruleset."""
    chosen = rules.choose(benchmark, explicit=explicit, path_round=path_round, log_format=log_format,
                          harness_run=harness_run)
    if not chosen.fallback or log_format != "MLLOG":
        return chosen
    having = rules.having(benchmark)
    window = window_of(start_ms)
    dated = rules.ruleset_of_round(window[0]) if window else None
    where = f"its dates fall in {window[0]}'s window ({window[1]} to {window[2]})" if window else ""

    def ruleset(version: str, why: str) -> Ruleset:
        return Ruleset(version, version, f"training_{version}/common.yaml", f"{rules.round_named(path_round)}: {why}",
                       from_log=True)

    def passes(version: str) -> bool:
        return official.judge(lines, ruleset(version, ""), seconds_based).status == PASS

    if dated in having and passes(dated):
        return ruleset(dated, f"{where} and {dated}'s rules pass it")
    passing = [v for v in having if v != dated and passes(v)]
    if len(passing) == 1:
        return ruleset(passing[0], f"its keys pass {passing[0]}'s rules alone of the rulesets with {benchmark}")
    if passing:
        best = min(passing, key=lambda v: abs(_number(v) - _number(dated))) if dated else passing[-1]
        nearest = f"the nearest to {dated}, the round of its dates" if dated else "the newest"
        return ruleset(best, f"its keys pass the rules of {', '.join(passing)}; {best} is {nearest}")
    if dated in having:
        return ruleset(dated, f"{where}; no ruleset's rules pass it")
    return chosen


def _number(version: Optional[str]) -> float:
    major, minor, *_ = (version or "0.0").split(".")
    return int(major) + int(minor) / 10


ON_PREMISE = "Available on-premise"
CLOUD = "Available cloud"
PREVIEW = "Preview"
RDI = "Research, Development, or Internal (RDI)"
ORDER = (ON_PREMISE, CLOUD, PREVIEW, RDI)  # MLPerf's order of the categories in its results tables
UNKNOWN = "n/a"
SHORT = {ON_PREMISE: "available on-premise", CLOUD: "available cloud", PREVIEW: "preview", RDI: "RDI",
         UNKNOWN: "availability not stated"}


@dataclass(frozen=True)
class Listing:
    submitter: str
    status: Optional[str]  # as the system description writes it
    availability: str  # one of ORDER, the status as written, or n/a
    system_name: Optional[str]
    nodes: Optional[int] = None  # number_of_nodes (v0.7 on; some write "number of nodes"), else None
    per_node: Optional[int] = None  # accelerators_per_node


def category(status: Any) -> str:
    """MLPerf's availability category of a description's `status`."""
    if not isinstance(status, str) or not status.strip():
        return UNKNOWN
    text = status.strip().lower()
    for name in ORDER:
        if text == name.lower():
            return name
    words = set(text.replace("-", " ").replace(",", " ").split())
    if "preview" in words:
        return PREVIEW
    if words & {"research", "rdi", "internal", "development"}:
        return RDI
    if "cloud" in words:
        return CLOUD
    if text in ("onprem", "available") or "prem" in text or "premise" in words:
        return ON_PREMISE
    return status.strip()


def order(availability: str) -> int:
    return ORDER.index(availability) if availability in ORDER else len(ORDER)


@functools.lru_cache(maxsize=1024)
def listing(folder: str) -> Listing:
    """The listing of the system a benchmark folder `<org>/results/<system>/<benchmark>` belongs to."""
    bench = Path(folder)
    system_dir = bench.parent
    org = system_dir.parent.parent.name if system_dir.parent.name == "results" else "?"
    # v0.5's trees put one or two folders of the submission between the organisation and results/
    # (v0.5.0/google/cloud_v3.8/gnmt-tpuv3-8/results/, v0.5.0/nvidia/submission/results/)
    below = next((a for a in bench.parents if a.parent.name == "v0.5.0"), None)
    org = below.name if below is not None and org != "?" else org
    data = _read(system_dir.parent.parent / "systems" / f"{system_dir.name}.json")
    if data is None:
        data = _read(system_dir / "entry.json") or {}
    submitter = data.get("submitter")
    status = data.get("status")
    name = data.get("system_name")
    return Listing(one_line(submitter).strip() if isinstance(submitter, str) and submitter.strip() else org,
                   status.strip() if isinstance(status, str) else None, category(status),
                   name.strip() if isinstance(name, str) and name.strip() else None,
                   _int(data.get("number_of_nodes", data.get("number of nodes"))), _int(data.get("accelerators_per_node")))


def _int(x: Any) -> Optional[int]:
    """A count as descriptions write it (4, "4", " 4 "), else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    return int(x) if isinstance(x, str) and x.strip().isdigit() else None


def _read(path: Path) -> Optional[dict]:
    """A JSON system description; None where there is none or it is not JSON (v0.6's key: value lines,
    which name no status)."""
    try:
        data = loads(read_text(path, errors="replace"))  # a pipe by its name would wait for ever
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def has_power(folder: Optional[str]) -> bool:
    return folder is not None and (Path(folder) / "power").is_dir()


def folder_energy(folder: str, runs: Sequence[RunSummary], benchmark: str, scaling: float
                  ) -> tuple[Optional[float], Optional[str]]:
    """(the summarizer's energy score in joules, or None; a note where it cannot be computed)."""
    from mlperf_logging.result_summarizer.result_summarizer import _compute_total_power, _index_olympic_average

    kept = [r for r in runs if r.counted and r.run_start_ms is not None and r.run_stop_ms is not None]
    if not kept:
        return None, "no run counts: no energy score"
    rulesets = {r.check_ruleset for r in kept}
    if len(rulesets) != 1 or not _official(next(iter(rulesets))):
        return None, "energy needs the runs' official ruleset, and these logs have none (or several)"
    ruleset = str(next(iter(rulesets)))
    energy = []
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the summarizer prints its warnings
            for r in kept:
                ms = float(r.run_stop_ms) - float(r.run_start_ms)  # type: ignore[arg-type]
                energy.append(float(_compute_total_power(folder, r.path, ms, ruleset)))
    except Exception as err:  # a missing node file or power_measurement_start: the summarizer stops there
        return None, f"the power results cannot be read ({type(err).__name__}: {err})"
    times = [r.time_to_train_min or 0.0 for r in kept]
    index = [i for i, _ in sorted(enumerate(times), key=lambda x: x[1])]
    dropped = len([r for r in runs if r.interrupted is None]) - len(kept)
    max_dropped = 4 if benchmark == "unet3d" else 1
    if dropped > max_dropped:
        return None, f"void: {dropped} runs do not count"
    value = _index_olympic_average(energy, index, dropped, max_dropped)
    return (None, "too few runs for an olympic mean") if value is None else (value * scaling, None)


def _official(ruleset: Optional[str]) -> bool:
    return bool(ruleset) and all(part.isdigit() for part in str(ruleset).split("."))
