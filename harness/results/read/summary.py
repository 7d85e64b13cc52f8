"""One run as the report sees it: what its log (and, for harness runs, its result.json) says.

Built by harness.results.read.parse from a log of any round (what the log says), or from a harness run's
result.json alone; the checkers' fields (check, check_ruleset, check_source, check_reason, the RCP
checker's epoch_unit and convergence) are joined in by harness.results.read.checking.join, which returns
a new RunSummary. Fields are documented in docs/report.md (the JSON schema's "runs").

Three lists say what is wrong with a run, and only the first keeps it out of a score:
`problems` (the official checker rejects a run that says it succeeded, or its numbers cannot be
read; of these, `faults` say the log's own clock or timed region cannot be trusted, which a pass of
the official checker does not forgive), `warnings` (the harness's own sanity findings and other oddities the official tools let
through) and `interrupted` (stopped by Ctrl-C or SIGTERM: not a completed run, listed apart and
never scored, as MLPerf scores completed runs only).

A run's precision label (`split_label`, `join_label`): the base precision it trained in, then the path its
step ran.

result.json's `precision`, bench.jsonl's and the tables' rows carry one label: the base precision first
(fp32, tf32, amp, bf16, optionally +master for fp16 weights and +fp8 for fp8 matmuls), then the parts of
the path the step ran,
each after a "+": "amp" (the eager step), "tf32+graph" (replayed from a CUDA graph),
"amp+compile(reduce-overhead)", "amp+master+compile+graph". Tables compare like paths with like, and
each fast path with the eager step of its base precision (harness/results/analysis/throughput.py).

    python -c "from harness.results.read.summary import split_label; print(split_label('amp+compile+graph'))"
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from harness.interface.quality import QualitySpec


SUCCESS = "success"
INCOMPLETE = "incomplete"  # no run_stop: crashed, killed or still running
# the official compliance checker's verdict on a log (harness.results.read.official)
PASS, FAIL, CRASH, REFUSED, UNCHECKED = "pass", "fail", "crash", "refused", "unchecked"
_SIGNAL = re.compile(r"\b(SIG[A-Z0-9]+)\b")


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def one_line(text: str) -> str:
    """`text` with its control characters (a newline, a tab, an escape) as a space: a name a log or a system
    description gives stays one cell of a table, one line of the notes, never a heading of the page."""
    return _CONTROL.sub(" ", text)


def interrupted_by(reason: Any) -> Optional[str]:
    """The signal that stopped a run, from run_stop's `reason` ("SIGTERM") or result.json's
    ("interrupted (SIGINT to rank 1) before run_start: ..."); None for any other reason (a crash
    names its exception, a run that missed its target names none)."""
    if not isinstance(reason, str):
        return None
    text = reason.strip()
    if not (text.startswith("SIG") or text.startswith("interrupted")):
        return None
    m = _SIGNAL.search(text)
    return m.group(1) if m else "SIGINT"  # a bare KeyboardInterrupt is Ctrl-C


@dataclass(frozen=True)
class Shortfall:
    """Why a run whose log says success is not converged (harness.results.analysis.collect finds it;
    harness.results.report.sections.shortfall_text says it): its last evaluation against the target, in the terms
    of the metric's spec, or the one-line error where the two cannot be compared (NaN, not a number)."""

    spec: QualitySpec
    quality: Any
    target: Any
    error: Optional[str] = None


class LogError(ValueError):
    """A file that holds no run that can be read; the message names the problem."""


@dataclass
class RunSummary:
    path: str
    benchmark: Optional[str] = None
    status: str = INCOMPLETE  # run_stop's status (success, aborted, ...) or incomplete
    org: Optional[str] = None
    division: Optional[str] = None
    platform: Optional[str] = None
    seed: Optional[int] = None
    world_size: Optional[int] = None  # nodes x accelerators per node: the log's keys or the tree's system file
    precision: Optional[str] = None  # a harness extension key; absent from official logs
    global_batch_size: Optional[int] = None
    run_start_ms: Optional[float] = None
    run_stop_ms: Optional[float] = None
    time_to_train_s: Optional[float] = None
    time_to_train_min: Optional[float] = None
    init_time_s: Optional[float] = None  # init_stop - first init_start
    epochs_to_converge: Optional[float] = None
    evals: list[tuple[Any, Any]] = field(default_factory=list)  # (epoch_num, eval_accuracy: a number or named parts)
    throughput: Optional[float] = None  # tracked_stats samples / seconds, or derived (below)
    timestamp_unit: str = "ms"
    problems: list[str] = field(default_factory=list)  # why this run cannot be scored as it is
    # the problems no pass of the official checker forgives (each also in problems): a run_stop inside the run,
    # a clock that cannot be a round's dates; the log's own time cannot be trusted
    faults: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # worth knowing; the run is still scored
    interrupted: Optional[str] = None  # the signal that stopped it (SIGINT, SIGTERM): listed apart, never scored
    # the official compliance checker on the log, with the ruleset of its round (harness.results.read.checking)
    check: Optional[str] = None  # pass, fail, crash (the checker itself failed), refused (screened), unchecked
    check_ruleset: Optional[str] = None  # "4.0.0", "harness-ncf-0.7.0"
    check_source: Optional[str] = None  # why that ruleset: "v4.0 in the path", "--ruleset", ...
    check_reason: Optional[str] = None  # the checker's first messages, one line
    folder: Optional[str] = None  # in a submission tree: <division>/<org>/results/<system>/<benchmark>, its score's home
    # from the harness's files beside the log (result.json, system.json); absent from official logs
    accelerator: Optional[str] = None  # the GPU model, or CPU (official logs: the tree's system description)
    energy_j: Optional[float] = None  # energy to train: run_start..run_stop, all GPUs of the run
    power_w: Optional[float] = None  # mean power over that window, all GPUs of the run
    # where the run comes from and how its numbers were read
    round: Optional[str] = None  # "v0.5", "v0.6", "v0.7", ... ("v0.7+" for an MLLOG log outside a tree)
    log_format: Optional[str] = None  # "MLPv0.5.0", "MLL", "MLLOG"; None for a result.json without a log
    system: Optional[str] = None  # the system's name in its submission tree
    framework: Optional[str] = None
    throughput_unit: Optional[str] = None  # "samples/s", "tokens/s", "epochs/s" (derived without a sample count)
    throughput_derived: bool = False  # from the epoch (or block) intervals, not from tracked_stats
    target: Any = None  # the target as the log or result.json states it (v0.5's eval_target), else None
    quality_metric: Optional[str] = None
    quality_direction: Optional[str] = None  # "higher" or "lower" is better, where the run says
    epoch_unit: str = "epochs"  # what epochs_to_converge counts: "epochs", "samples" or "steps" (the RCP reading)
    busy: Optional[bool] = None  # result.json host_load.busy: other processes used the machine during the run
    host_note: Optional[str] = None  # host_load.note
    submitter_scored: Optional[bool] = None  # listed in the tree's first_50_success_file (v0.5 NCF); None: no list
    data_wait_s: Optional[float] = None  # result.json: rank 0's wait for batches over the counted steps
    data_wait_share: Optional[float] = None  # data_wait_s / training seconds of those steps (0..1)
    data_wait_warmup_s: Optional[float] = None  # result.json: the wait over the warm-up steps (loaders' start-up)
    # a harness run's settings beyond its group key, from its config.yaml: ((option, value as JSON), ...) sorted
    settings: tuple[tuple[str, str], ...] = ()
    short_of_target: Optional[Shortfall] = None  # its log says success, but its quality does not reach the target

    @property
    def scorable(self) -> bool:
        """Clean enough for MLPerf's summarizer to score: it drops runs its checker rejects."""
        return not self.problems

    @property
    def converged(self) -> bool:
        """A success that MLPerf would score as one: its quality reaches the target (NaN, a value that is not
        a number or one short of the target is no success, whatever run_stop says)."""
        return self.status == SUCCESS and self.scorable and self.interrupted is None and self.short_of_target is None

    @property
    def counted(self) -> bool:
        """Its time enters the olympic mean, as mlperf_logging's result_summarizer decides: every log
        its compliance checker passes that has run_start and run_stop, whatever run_stop's status
        (in 0.7.0 on the target is the checker's, and the open division states none); where no
        official checker judged the log (v0.5, a benchmark no ruleset has, a checker that crashed):
        a run whose status is success."""
        if self.interrupted is not None or self.problems or self.time_to_train_min is None:
            return False
        if self.short_of_target is not None:
            return False  # not converged: it counts as the slowest, as a run that did not converge
        return self.check == PASS or (self.check not in (PASS, FAIL, REFUSED) and self.status == SUCCESS)

    @property
    def final_quality(self) -> Any:
        return self.evals[-1][1] if self.evals else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evals"] = [list(e) for e in self.evals]
        out["scorable"] = self.scorable
        out["counted"] = self.counted
        return out


def kind_of(message: str, width: int = 90) -> str:
    """A message with its numbers and quoted log text taken out, so that one kind of finding counts
    once: 'timestamps go backwards: line N (run_stop) is N s before line N (eval_accuracy)'."""
    text = re.sub(r"\d[\d.,]*", "N", message.strip().splitlines()[0] if message.strip() else "")
    text = re.sub(r"/\S+", "PATH", text)
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


@dataclass
class Tally:
    """What happened to the runs a report read, with the reasons by kind ({kind: runs})."""

    runs: int = 0
    scored: int = 0  # their time entered a score (counted)
    warned: int = 0  # scored or not, with warnings
    not_converged: int = 0  # complete, judged, and not counted: the target was not reached
    unscorable: int = 0  # with problems: rejected by the official checker, or unreadable
    interrupted: int = 0  # stopped by a signal: listed apart
    warnings: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    signals: dict[str, int] = field(default_factory=dict)


def tally(runs: list[RunSummary]) -> Tally:
    out = Tally(runs=len(runs))
    for r in runs:
        if r.interrupted is not None:
            out.interrupted += 1
            out.signals[r.interrupted] = out.signals.get(r.interrupted, 0) + 1
            continue
        if r.counted:
            out.scored += 1
        elif r.problems:
            out.unscorable += 1
        else:
            out.not_converged += 1
        if r.warnings:
            out.warned += 1
        for bucket, messages in ((out.warnings, r.warnings), (out.problems, r.problems[:1])):
            for kind in dict.fromkeys(kind_of(m) for m in messages):
                bucket[kind] = bucket.get(kind, 0) + 1
    return out


EAGER = "eager"
BASE_PARTS = ("master", "fp8")  # parts of a label that belong to its base precision, not to its path
_PARTS = re.compile(r"\+(?![^()]*\))")  # a "+" outside parentheses: compile(...) is one part


def split_label(precision: str) -> tuple[str, str]:
    """(base precision, path) of a precision label: "amp+master+compile(reduce-overhead)+graph" ->
    ("amp+master", "compile(reduce-overhead)+graph"); "tf32" -> ("tf32", "eager"). The base comes first
    (fp32, tf32, amp, bf16, optionally +master and +fp8), then the parts of the path the step ran."""
    base, *parts = _PARTS.split(precision)
    while parts and parts[0] in BASE_PARTS:
        base += "+" + parts.pop(0)
    return base, "+".join(p for p in parts if p and p != EAGER) or EAGER


def join_label(base: str, path: str) -> str:
    """The label of a base precision run on a path: "amp" for the eager step, else "amp+graph"."""
    return base if path == EAGER else f"{base}+{path}"
