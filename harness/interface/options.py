"""Typed model options: each model's config is a dataclass whose fields carry their default, their
bound and their documentation.

A model declares `@dataclass class <Model>Options(ModelOptions)` with one docstring under each field
(the way torchtitan documents its job config). The registry stores it as the schema of its package's
conf/model/<name>.yaml, so Hydra checks every key and type when the config is composed (a typo or a
string where a number belongs is a one-line error before anything runs), and
`python -m harness.train --help model=<name>` prints the fields with their bounds and documentation
(harness.interface.option_help).

The dataclass is the one source of an option's default and bound; a preset's YAML holds only what it
changes. A field is bounded by its type (a bool, or a `Choice`), by `option(...)`'s range (`ge`,
`gt`, `le`, `lt`, for a number or for every number of a list, and a list's `length`), or declares
with `option(..., unbounded="...")` why no bound applies; rules between fields (resize_size at least
image_size) are the class's `relations`. `check` and `check_relations` hold a composed config to
them and raise OptionError, one line that names the option, its value and what it needs:

    momentum: float = option(0.9, ge=0, lt=1)      # and a docstring under it: "SGD momentum."

    model.momentum=-5.0: out of range; need 0 <= momentum < 1      # what model.momentum=-5 gets
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import math
import re
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from omegaconf import MISSING, DictConfig, OmegaConf

_BOUND = "harness.bound"
_UNBOUNDED = "harness.unbounded"


class Choice(str, enum.Enum):
    """A string option with a fixed set of values. Declared as a field's type (`optimizer: Optimizer =
    Optimizer.sgd` with `class Optimizer(Choice): sgd = "sgd"; lars = "lars"`), it makes Hydra refuse
    any other value when the config is composed, in one line that lists the choices, before anything
    runs. Its members compare, print and serialise as their plain strings."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return repr(self.value)


class LrScaling(Choice):
    """How a learning rate follows the global batch (harness.interface.scaled_learning_rate)."""

    none = "none"
    linear = "linear"
    sqrt = "sqrt"


# torch.compile's modes, named as torch spells them (hyphens: the functional form of an Enum); one
# choice shared by every model with a compile option
CompileMode = Choice("CompileMode", [(m, m) for m in ("default", "max-autotune-no-cudagraphs",  # type: ignore[call-overload]
                                                       "reduce-overhead", "max-autotune")])


def compile_kwargs(mode: Any, inductor: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """torch.compile's keyword arguments for a CompileMode value ("default": torch's own default) and, where
    given, Inductor settings (torch._inductor.config's names) for this compilation alone."""
    if not inductor:
        return {} if str(mode) == "default" else {"mode": str(mode)}
    # torch.compile refuses a mode beside options: the mode's own settings go in with them instead
    from torch._inductor import list_mode_options

    return {"options": {**list_mode_options(str(mode)), **inductor}}


class OptionError(ValueError):
    """An option outside its bound; the message is one line naming the option, its value and the bound."""


class UnknownOption(OptionError):
    """A key no field of the options declares (added with Hydra's +key=value)."""

    def __init__(self, key: str):
        super().__init__(f"unknown option '{key}'")
        self.key = key


@dataclass(frozen=True)
class Bound:
    """The range a number, or every number of a (nested) list, must lie in; `length`: a list's items."""

    ge: Optional[float] = None
    gt: Optional[float] = None
    le: Optional[float] = None
    lt: Optional[float] = None
    length: Optional[int] = None  # exactly this many items
    min_length: Optional[int] = None  # at least this many items
    pattern: Optional[str] = None  # a string: matches this regular expression whole
    like: str = ""  # what `pattern` allows, in words

    def range_text(self, name: str) -> str:
        """'0 <= momentum < 1', 'batch_size >= 1'."""
        low = f"{_num(self.ge)} <= " if self.ge is not None else f"{_num(self.gt)} < " if self.gt is not None else ""
        high = f" <= {_num(self.le)}" if self.le is not None else f" < {_num(self.lt)}" if self.lt is not None else ""
        if not low and not high:
            return ""
        if low and not high:  # 'name >= 1' reads better than '1 <= name'
            return f"{name} {'>=' if self.ge is not None else '>'} {_num(self.ge if self.ge is not None else self.gt)}"
        return f"{low}{name}{high}"

    def text(self, name: str, of_list: bool = False) -> str:
        """What the bound says, as the error and --help print it (`of_list`: of a list's numbers)."""
        parts = []
        if self.length is not None:
            parts.append(f"{self.length} items")
        elif self.min_length is not None:
            parts.append(f"at least {self.min_length} item{'s' if self.min_length != 1 else ''}")
        rng = self.range_text("each" if of_list else name)
        if rng:
            parts.append(rng)
        if self.pattern is not None:
            parts.append(self.like or f"{name} matching {self.pattern}")
        return ", ".join(parts)

    def holds(self, value: Any) -> bool:
        if isinstance(value, str) and self.pattern is not None:
            return re.fullmatch(self.pattern, value) is not None
        if isinstance(value, (list, tuple)):
            if self.length is not None and len(value) != self.length:
                return False
            if self.min_length is not None and len(value) < self.min_length:
                return False
            return all(self._number_holds(x) for x in _leaves(value))
        return self._number_holds(value)

    def _number_holds(self, x: Any) -> bool:
        if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
            return True  # the schema holds the types; a bound only judges numbers
        if isinstance(x, float) and not math.isfinite(x):
            return False  # nan and inf: no option of a model takes either
        return ((self.ge is None or x >= self.ge) and (self.gt is None or x > self.gt)
                and (self.le is None or x <= self.le) and (self.lt is None or x < self.lt))


def option(default: Any = MISSING, *, factory: Optional[Callable[[], Any]] = None, ge: Optional[float] = None,
           gt: Optional[float] = None, le: Optional[float] = None, lt: Optional[float] = None,
           length: Optional[int] = None, min_length: Optional[int] = None, pattern: Optional[str] = None,
           like: str = "", unbounded: Optional[str] = None) -> Any:
    """A dataclass field with its default (or `factory` for a list) and its bound, or `unbounded`:
    why no bound applies (a path, free text). `pattern` (a regular expression, `like` in words) bounds
    a string. None passes any bound: an Optional field's null is its own meaning, said in its docstring."""
    if unbounded is not None:
        if any(b is not None for b in (ge, gt, le, lt, length, min_length, pattern)):
            raise TypeError("an option is either bounded or says why not, not both")
        metadata: dict[str, Any] = {_UNBOUNDED: unbounded}
    else:
        bound = Bound(ge, gt, le, lt, length, min_length, pattern, like)
        if bound == Bound():
            raise TypeError("option() needs a bound (ge, gt, le, lt, length) or unbounded='why not'")
        metadata = {_BOUND: bound}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Broken:
    """A rule between options that a config breaks: the option named, its value, what it needs."""

    option: str
    value: Any
    need: str


@dataclass
class ModelOptions:
    """Options every model has."""

    name: str = option(MISSING, unbounded="the model's registry name, set by model=<name>: any other is an "
                                          "unknown model")
    """The model's registry name: model=<name>."""
    batch_size: int = option(MISSING, ge=1)
    """Samples per rank per step; the global batch is batch_size x ranks."""
    max_epochs: int = option(1, ge=1)
    """The epoch cap: a run that has not reached its target by then ends aborted."""
    target: Any = option(None, unbounded="held to the model's quality metric instead: a number, or one per part")
    """The quality target: a number, or one number per part ({BBOX: 0.377, SEGM: 0.339}); null for a
    throughput-only model."""
    eval_every: int = option(1, ge=1)
    """Epochs between evaluations (each evaluation closes an MLPerf block)."""
    eval_offset: int = option(0, ge=0)
    """Shift of the evaluation epochs: evaluations after epochs eval_every*k - eval_offset (k >= 1);
    below eval_every."""
    eval_epochs: Optional[list[int]] = option(None, ge=1)
    """Evaluate after exactly these epochs instead (and after the last one), in increasing order."""
    eval_every_samples: Optional[int] = option(None, ge=1)
    """Evaluate every this many training samples (all ranks together) instead of by epochs."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        """The rules between this model's options, or with the run's epoch cap, that no bound of one
        option expresses; a subclass yields a Broken for each rule the values break. (The evaluation
        schedule's rules are harness.interface.schedule's.)"""
        return iter(())


def bound_of(f: dataclasses.Field) -> Optional[Bound]:
    return f.metadata.get(_BOUND)


def unbounded_reason(f: dataclasses.Field) -> Optional[str]:
    return f.metadata.get(_UNBOUNDED)


@functools.lru_cache(maxsize=None)
def field_types(options: type) -> dict[str, Any]:
    """{field: its resolved type} (the annotations are strings under `from __future__ import annotations`)."""
    return typing.get_type_hints(options)


def bounded_by_type(kind: Any) -> bool:
    """A bool or a Choice: the schema itself refuses every other value."""
    kind = without_none(kind)
    return kind is bool or (isinstance(kind, type) and issubclass(kind, enum.Enum))


def nested_options(kind: Any) -> Optional[type]:
    """The dataclass of a nested block of options (GNMT's `synthetic`), if the field is one."""
    kind = without_none(kind)
    return kind if isinstance(kind, type) and dataclasses.is_dataclass(kind) else None


def check(options: type, node: Any, prefix: str) -> None:
    """Hold a composed config node (cfg.model, or the harness's own root) to the bounds of `options`:
    OptionError on the first option out of bounds, UnknownOption on a key no field declares. Types and
    choices were held by the schema when the node was composed."""
    kinds = field_types(options)
    names = {f.name for f in dataclasses.fields(options)}
    for key in node:
        if str(key) not in names:
            raise UnknownOption(f"{prefix}{key}")
    for f in dataclasses.fields(options):
        if f.name not in node:
            continue
        if OmegaConf.is_config(node) and OmegaConf.is_missing(node, f.name):
            raise OptionError(f"{prefix}{f.name} has no value: set {prefix}{f.name}=...")
        value = _plain(node[f.name])
        nested = nested_options(kinds[f.name])
        if nested is not None and value is not None:
            check(nested, node[f.name], f"{prefix}{f.name}.")
            continue
        bound = bound_of(f)
        if bound is not None and value is not None and not bound.holds(value):
            finite = "" if all(math.isfinite(x) for x in _numbers(value)) else "a finite number, "
            raise OptionError(f"{prefix}{f.name}={shown(value)}: out of range; "
                              f"need {finite}{bound.text(f.name, is_list(kinds[f.name]))}")


def broken_relations(options: type, node: DictConfig, max_epochs: int) -> list[Broken]:
    """The rules between a model's composed options (within their bounds already) that they break, given
    the run's epoch cap."""
    instance = OmegaConf.to_object(node)  # in its config: interpolations into the dataset resolve
    if not isinstance(instance, ModelOptions):  # a node composed without its schema
        instance = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(options), node))
    return list(instance.relations(int(max_epochs)))  # type: ignore[union-attr]


def check_relations(options: type, node: DictConfig, prefix: str, max_epochs: int) -> None:
    """Hold a model's composed options, within their bounds already, to its relations (given the
    run's epoch cap): OptionError on the first rule they break."""
    for broken in broken_relations(options, node, max_epochs):
        need = f"{broken.option.rpartition('.')[2]} {broken.need}" if broken.need[:1] in "<>=" else broken.need
        raise OptionError(f"{prefix}{broken.option}={shown(broken.value)}: out of range; need {need}")


def is_list(kind: Any) -> bool:
    """A field's type is a list (or an Optional one)."""
    return typing.get_origin(without_none(kind)) is list


def without_none(kind: Any) -> Any:
    """Optional[X]'s X; any other type as it is."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) is typing.Union and len(args) == 1:
        return args[0]
    return kind


def _plain(value: Any) -> Any:
    if OmegaConf.is_config(value):
        return OmegaConf.to_container(value, resolve=True)
    return value


def _numbers(value: Any) -> list[float]:
    values = list(_leaves(value)) if isinstance(value, (list, tuple)) else [value]
    return [x for x in values if isinstance(x, float)]


def _leaves(value: Any) -> Iterator[Any]:
    for x in value:
        if isinstance(x, (list, tuple)):
            yield from _leaves(x)
        else:
            yield x


def _num(x: Optional[float]) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def shown(value: Any) -> str:
    """A value as an error and --help print it: a string quoted, a choice by its plain value."""
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return str(value)
