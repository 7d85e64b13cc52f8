"""What `python -m harness.train --help` prints about options: each field of an options dataclass
with its value, its bound or choices and its documentation, the docstring under the field, read from
the source (harness.interface.options declares and checks them).

    python -c "from harness.interface.option_help import describe; from reference_models.ncf.options import NCFOptions; print(describe(NCFOptions))"
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import textwrap
from typing import Any, Callable, Mapping, Optional

from harness.interface.options import bound_of, field_types, is_list, nested_options, shown, without_none
# the commands and the models' generators import it from here (a model imports harness.interface only); it lives
# in a leaf that scripts import without the harness's dependencies
from harness.usage import module_doc as module_doc


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


def describe(options: type, values: Optional[Mapping[str, Any]] = None, prefix: str = "",
             source: Optional[Callable[[str], str]] = None) -> str:
    """The fields of `options`, one block each: name, value (from `values`, else the default), its
    bound or choices, what set it (`source` of its dotted name, if given), and its documentation;
    nested blocks of options follow as `<field>.<name>`."""
    docs, kinds = field_docs(options), field_types(options)
    lines = []
    for f in dataclasses.fields(options):
        if values is not None and f.name in values:
            value = values[f.name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            value = "(required)"
        nested = nested_options(kinds[f.name])
        if nested is not None:
            inner = value if isinstance(value, Mapping) else None
            if docs.get(f.name):
                lines.append(f"  {prefix}{f.name}: " + docs[f.name])
            lines.append(describe(nested, inner, f"{prefix}{f.name}.", source))
            continue
        head = f"  {prefix}{f.name} = {shown(value)}".replace("'???'", "(required)")
        rule = _rule_text(f, kinds[f.name])
        lines.append(head + (f"    [{rule}]" if rule else "") + (f"    <- {source(prefix + f.name)}" if source else ""))
        if docs.get(f.name):
            lines += ["      " + line for line in textwrap.wrap(docs[f.name], 92)]
    return "\n".join(lines)


def _rule_text(f: dataclasses.Field, kind: Any) -> str:
    plain = without_none(kind)
    if isinstance(plain, type) and issubclass(plain, enum.Enum):
        return "one of: " + ", ".join(str(m.value) for m in plain)
    bound = bound_of(f)
    return bound.text(f.name, is_list(kind)) if bound is not None else ""

