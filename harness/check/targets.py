"""Each benchmark's metric, the rules a log of it is checked against and the quality target they hold it to:
MLPerf's own, or a registered model's (HARNESS_MODELS' too).

    python -m harness.check.targets gnmt maskrcnn rnnt
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional

from harness import registry
from harness.results.read.rules import metric_name, pick_rules, rules_target


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.check.targets", description=__doc__.splitlines()[0])
    parser.add_argument("benchmarks", nargs="+", help="MLPerf benchmark names, as their logs carry them")
    args = parser.parse_args(argv)
    registry.publish()
    for benchmark in args.benchmarks:
        _, label, rules = pick_rules(benchmark)
        target = rules_target(benchmark)
        what = "no target" if target is None else f"{target.value} ({target.direction} is better) from {target.source}"
        print(f"{benchmark}: {metric_name(benchmark)}; rules {label} ({rules}); {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
