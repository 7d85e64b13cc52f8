"""Typed model options: each model's config is a dataclass whose fields carry their documentation.

A model declares `@dataclass class <Model>Options(ModelOptions)` with one docstring under each field
(the way torchtitan documents its job config). The registry stores it as the schema of
conf/model/<name>.yaml, so Hydra checks every key and type when the config is composed (a typo or a
string where a number belongs is a one-line error before anything runs), and
`python -m harness.train --help model=<name>` prints the fields with their documentation.
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

from omegaconf import MISSING


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


@dataclass
class ModelOptions:
    """Options every model has."""

    name: str = MISSING
    """The model's registry name: model=<name>."""
    batch_size: int = MISSING
    """Samples per rank per step; the global batch is batch_size x ranks."""
    max_epochs: int = 1
    """The epoch cap: a run that has not reached its target by then ends aborted."""
    target: Any = None
    """The quality target: a number, or one number per part ({BBOX: 0.377, SEGM: 0.339}); null for a
    throughput-only model."""
    eval_every: int = 1
    """Epochs between evaluations (each evaluation closes an MLPerf block)."""
    eval_offset: int = 0
    """Shift of the evaluation epochs: evaluations after epochs eval_every*k - eval_offset (k >= 1)."""
    eval_epochs: Optional[list[int]] = None
    """Evaluate after exactly these epochs instead (and after the last one)."""
    eval_every_samples: Optional[int] = None
    """Evaluate every this many training samples (all ranks together) instead of by epochs."""


def field_docs(options: type) -> dict[str, str]:
    """{field: its docstring} over the dataclass and its bases, read from the source."""
    docs: dict[str, str] = {}
    for klass in reversed(options.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:] + [None]):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr) \
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def describe(options: type, values: Optional[dict[str, Any]] = None) -> str:
    """The fields of `options`, one block each: name, value (from `values`, else the default), doc."""
    docs = field_docs(options)
    lines = []
    for f in dataclasses.fields(options):
        if values is not None and f.name in values:
            value = values[f.name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            value = f.default_factory()  # type: ignore[misc]
        else:
            value = "(required)"
        lines.append(f"  {f.name} = {value!r}".replace("'???'", "(required)"))
        if docs.get(f.name):
            lines += ["      " + line for line in textwrap.wrap(docs[f.name], 92)]
    return "\n".join(lines)
