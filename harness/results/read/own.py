"""The harness's own benchmarks as results/ sees them, and the MLPerf category of any benchmark.

Each registered model's name, MLPerf benchmark, ruleset, rules file and category, as data. The registry
hands its table in (`harness.registry.publish`, called by every command before it reads a log), so that
reading or reporting a log never imports the registry or a model package, and a model from
HARNESS_MODELS is known as the list's are.

Categories, for geometric means per category: a registered model declares its own (ModelSpec.category,
found by its name or its MLPerf benchmark's); any other name, such as the benchmarks of official MLPerf
logs that no model here runs, is looked up in MLPerf's own areas below. A name found nowhere goes to
"other".

    python -c "from harness import registry; registry.publish(); from harness.results.read import own; print(own.named('gnmt'), own.category('dlrm'))"
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from harness.interface.suite import LANGUAGE, OTHER, RECOMMENDATION, REINFORCEMENT, SPEECH, VISION


@dataclass(frozen=True)
class OwnBenchmark:
    """What the rules and the report need of one of the harness's models."""

    name: str  # model=<name>
    benchmark: str  # MLPerf's submission_benchmark (the name, for a throughput-only model)
    category: str  # MLPerf's area: harness.interface.suite.CATEGORIES
    ruleset: Optional[str] = None  # the logging ruleset its logs follow; None: a throughput-only model
    rules_file: Optional[str] = None  # the harness's rules file where MLPerf ships none
    metric: str = ""  # what its eval_accuracy measures (HR@10, BLEU)


_source: Optional[Callable[[], Sequence[OwnBenchmark]]] = None


def provide(source: Callable[[], Sequence[OwnBenchmark]]) -> None:
    """Where the table comes from (read at each lookup: a model registered later is seen)."""
    global _source
    _source = source


def table() -> Sequence[OwnBenchmark]:
    if _source is None:
        # a command that reads logs without publishing the registry would check a harness model's log
        # against the wrong rules: refused, not guessed
        raise RuntimeError("results/ was asked about the harness's own models before any were published: "
                           "call harness.registry.publish() first")
    return _source()


def by_benchmark(benchmark: str) -> Optional[OwnBenchmark]:
    """The time-to-train model whose logs carry this submission_benchmark, if the harness has one."""
    return next((b for b in table() if b.ruleset is not None and b.benchmark == benchmark), None)


def named(key: str) -> Optional[OwnBenchmark]:
    """A model by its name or its MLPerf benchmark's."""
    return next((b for b in table() if key in (b.name, b.benchmark)), None)


# MLPerf Training's benchmarks of every round from v0.5 on that no model here registers, by MLPerf's
# own areas (the names official logs carry in submission_benchmark, and the aliases of result folders);
# the registered models' benchmarks (resnet, ssd, gnmt, ...) come from their specs
MLPERF_CATEGORIES: dict[str, str] = {
    "resnet50": VISION, "unet3d": VISION, "stable_diffusion": VISION, "flux1": VISION,
    "bert": LANGUAGE, "gpt3": LANGUAGE, "llama31_405b": LANGUAGE,
    "dlrm": RECOMMENDATION, "dlrmv4": RECOMMENDATION, "gnn": RECOMMENDATION,
    "rgat": RECOMMENDATION,
    "rnnt": SPEECH,
    "minigo": REINFORCEMENT,
}
# MLPerf's families whose members carry a suffix: bert-squad384, llama2_70b, gpt3_175b, dlrm_dcnv2, ...
_PREFIXES = (("bert", LANGUAGE), ("resnet", VISION), ("llama", LANGUAGE), ("gpt", LANGUAGE),
             ("dlrm", RECOMMENDATION))


def category(name: str) -> str:
    key = (name or "").strip().lower()
    declared = _registered(key)
    if declared is not None:
        return declared
    if key in MLPERF_CATEGORIES:
        return MLPERF_CATEGORIES[key]
    for prefix, cat in _PREFIXES:
        if re.match(rf"{prefix}(?:[\W_]|\d|$)", key):
            return cat
    return OTHER


def _registered(key: str) -> str | None:
    """The category a registered model declares, by its name or its MLPerf benchmark's."""
    entry = named(key)
    return entry.category if entry is not None else None
