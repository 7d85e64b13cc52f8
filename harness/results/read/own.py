"""The harness's own benchmarks as results/ sees them: each registered model's name, MLPerf benchmark,
ruleset, rules file and category, as data. The registry hands its table in (`harness.registry.publish`,
called by every command before it reads a log), so that reading or reporting a log never imports the
registry or a model package, and a model from HARNESS_MODELS is known as the list's are.

    python -c "from harness import registry; registry.publish(); from harness.results.read import own; print(own.named('gnmt'))"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence


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
