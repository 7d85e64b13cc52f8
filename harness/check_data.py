"""Check a model's dataset folder without training: every listed file is there and decodes, the
vocabulary is sane, the annotations are consistent, the data fills a global batch.

    python -m harness.check_data model=resnet dataset=imagenet          # decodes every image
    python -m harness.check_data model=ssd dataset=ssd_coco2017 --quick  # headers and file ends only
    python -m harness.check_data model=transformer dataset=wmt17 dataset.path=/data/wmt17

The options are those of harness.train (model, dataset, dataset.path, model.batch_size, gpus, ...):
the folder is checked as that run would read it. Prints what was checked, what the loader drops
or converts as the MLPerf reference does (a run counts it in result.json's data_findings), and one
line per problem (the first 50; --all for every one). An embedded dataset is generated first if it
is missing, as a run would. Exit status: 0 when the data can train, 1 when it cannot, 2 for a bad
option.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from harness.interface.option_help import module_doc
from harness import registry
from harness.config import compose
from harness.errors import ConfigError
from harness.interface import DataError
from harness.interface.findings import DataReport
from harness.interface.generator_cli import check_config

EXIT_OK, EXIT_BAD_DATA, EXIT_USAGE = 0, 1, 2
SHOWN = 50
USAGE = "usage: python -m harness.check_data model=<name> [dataset=<name>] [key=value ...] [--quick] [--all]"


def run(overrides: list[str], decode: bool = True) -> tuple[DataReport, Path]:
    """The report on the dataset that `harness.train <overrides>` would read; ConfigError for a bad
    option, DataError when there is no dataset to check."""
    cfg = compose(overrides)
    spec = registry.get(str(cfg.model.name))
    if spec.task is None:
        raise ConfigError(f"model={spec.name} is throughput-only: it trains on synthetic batches and has no dataset")
    if spec.task.check is None:
        raise ConfigError(f"model={spec.name} has no dataset check")
    if cfg.dataset.get("generator"):  # counts that make no dataset: refused before it is written
        check_config(spec.task.generator, cfg.dataset.generator)
    folder = spec.task.prepare(cfg)
    report = DataReport()
    spec.task.check(cfg, Path(folder), report, decode)
    return report, Path(folder)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        print(module_doc(__name__).strip())
        return EXIT_OK
    flags = {a for a in args if a.startswith("-")}
    unknown = flags - {"--quick", "--all"}
    if unknown:
        print(f"harness.check_data: error: unknown flag {sorted(unknown)[0]}; {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    overrides = [a for a in args if not a.startswith("-")]
    if not any(o.startswith("model=") for o in overrides):
        print(f"harness.check_data: error: name the model; {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    # what the loaders would warn about while reading is in the report's notes: no second copy
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    start = time.monotonic()
    try:
        report, folder = run(overrides, decode="--quick" not in flags)
    except ConfigError as err:
        print(f"harness.check_data: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (DataError, FileExistsError) as err:
        print(f"harness.check_data: error: {err}", file=sys.stderr)
        return EXIT_BAD_DATA
    print(f"{folder}:")
    for line in report.facts:
        print(f"  {line}")
    for line in report.notes:
        print(f"  handled as the reference does: {line}")
    shown = report.problems if "--all" in flags else report.problems[:SHOWN]
    for line in shown:
        print(f"error: {line}")
    if len(shown) < len(report.problems):
        print(f"... and {len(report.problems) - len(shown)} more problems (--all lists every one)")
    seconds = time.monotonic() - start
    if report.can_train:
        print(f"OK: the data can train ({seconds:.1f} s)")
        return EXIT_OK
    print(f"harness.check_data: {len(report.problems)} problem{'s' if len(report.problems) != 1 else ''} "
          f"stop training: fix them and check again ({seconds:.1f} s)", file=sys.stderr)
    return EXIT_BAD_DATA


if __name__ == "__main__":
    sys.exit(main())
