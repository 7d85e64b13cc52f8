"""A callable named by where it lives, imported when it is first called.

The registry imports every model package to read its SPEC, and so do commands that never train (the
report, the checker, --help), which must not pay for torch. A SPEC therefore names its builder, its
dataset preparation and its data check by module and attribute, and the harness imports the module,
with torch and the rest of the model, only when it calls one:

    build=lazy("reference_models.gnmt.benchmark:GNMTBenchmark")

A name that leads nowhere is one line, naming it, when the harness first calls it:

    python -c "from harness.interface import lazy; lazy('json:dump_it')({})"
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from harness.errors import ConfigError


@dataclass(frozen=True)
class Lazy:
    """`package.module:attribute`, imported and looked up at each call (the module once, as Python
    imports it), then called with the call's arguments."""

    spec: str

    def __post_init__(self) -> None:
        module, _, attribute = self.spec.partition(":")
        if not module or not attribute.isidentifier():
            raise ValueError(f"lazy({self.spec!r}): name the callable as 'package.module:attribute'")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target()(*args, **kwargs)

    def target(self) -> Callable[..., Any]:
        """What the name leads to, imported now: ConfigError (one line naming it) if nothing callable."""
        name, _, attribute = self.spec.partition(":")
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + ".")):
                raise  # a module the target's module imports is missing: that error names it
            raise ConfigError(f"{self.spec} leads nowhere: there is no module {err.name}") from None
        found = getattr(module, attribute, None)
        if not callable(found):
            raise ConfigError(f"{self.spec} leads nowhere: module {name} has no callable {attribute}")
        return found


def lazy(spec: str) -> Lazy:
    """The callable at `spec` ('package.module:attribute'), imported when it is first called."""
    return Lazy(spec)
