"""A generator's command line and its parallel writers, shared by every model's generate.py: the
spec dataclass's fields as options, the folder written or kept through harness.interface.generated.

    python -m reference_models.ncf.generate /tmp/ncf --users 400      # generator_main
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from harness.errors import ConfigError


def spawn_can_start() -> bool:
    """A spawned child re-imports the parent's __main__ by its file: a script read from standard
    input (`python - <<EOF`) has none, and a process pool would break. Such a parent works in-process."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return getattr(main, "__spec__", None) is not None or path is None or os.path.isfile(path)


def command_line(doc: str, folder: str, params: dict[str, Any], **options: dict[str, Any]) -> argparse.ArgumentParser:
    """A generator's command line (its docstring's first line as the description): the folder it
    writes, `options` ({name: add_argument's keywords}) as --name, then each of the generator's
    `params` as --<param> (hyphens for underscores) of its default's type and value."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(folder)
    for name, keywords in options.items():
        parser.add_argument(f"--{name}", **keywords)
    for name, value in params.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return parser


def generator_main(doc: Optional[str], spec_type: Callable[..., Any], ensure: Callable[[Any, str], Path],
                   argv: Optional[Sequence[str]] = None) -> None:
    """A generator's `python -m <model>.generate OUT [--param value ...]`: the spec dataclass's fields
    as options (command_line), the layout written into OUT or kept, and its path printed."""
    parser = command_line(doc or "", "out_dir", asdict(spec_type()))
    args = vars(parser.parse_args(argv))
    out_dir = args.pop("out_dir")
    try:
        spec = spec_type(**args)
    except ValueError as err:  # counts it cannot make a dataset of: refused as argparse refuses an option
        parser.error(str(err))
    print(f"wrote {ensure(spec, out_dir)}")


def check_config(make: Optional[Callable[..., Any]], params: Any) -> None:
    """A config's dataset.generator parameters given to the generator's spec (`make`, MLPerfTask.generator)
    before anything is written: the ValueError of counts that cannot make a dataset the model trains on
    is a one-line ConfigError naming the option. Each generator's spec holds its own rule."""
    if make is None or not params:
        return
    from omegaconf import DictConfig, OmegaConf

    values: dict[str, Any] = dict(OmegaConf.to_container(params, resolve=True)  # type: ignore[arg-type]  # a mapping
                                  if isinstance(params, DictConfig) else params)
    try:
        make(**values)
    except ValueError as err:
        name = str(err).split("=", 1)[0]
        raise ConfigError(f"dataset.generator.{err}" if name in values else f"dataset.generator: {err}") from None


def run_parallel(work: Callable[..., Any], tasks: Sequence[tuple], workers: Optional[int] = None) -> list[Any]:
    """[work(*task) for task in tasks], in order, over `workers` processes (default: every core).
    `work` must be a module-level function: spawned children import it. A generator whose every
    item comes from its own seeded stream writes the same files whichever process draws them."""
    workers = min(len(tasks), os.cpu_count() or 1) if workers is None else min(workers, len(tasks))
    if workers <= 1 or not spawn_can_start():
        return [work(*task) for task in tasks]
    # spawn, not fork: a forked child of a process whose BLAS threads already ran can hang in BLAS
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(work, *zip(*tasks)))
