"""The harness's layers import one way (docs/architecture.md): no import circle among harness's
modules, no model package imported outside the registry's list, and results/ reading and reporting
without the run or its hooks. Read from the source (ast), so a new lazy import is caught too."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

HARNESS = REPO / "harness"


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(HARNESS.rglob("*.py"))}


def _resolve(name: str) -> list[str]:
    """The harness modules that importing `name` runs: the module and each package above it."""
    parts = name.split(".")
    return [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in MODULES]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: str, at_import: bool) -> set[str]:
    """Every module `module` names in an import; with `at_import`, only those run when it is imported
    (the module's top level, not a function's body nor an `if TYPE_CHECKING:` block)."""
    tree = ast.parse(MODULES[module].read_text())
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if at_import and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if at_import and isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit(stmt)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - child.level + 1], *(
                        [child.module] if child.module else [])])
                found.add(base)
                found.update(f"{base}.{a.name}" for a in child.names)  # `from pkg import module`
            visit(child)

    visit(tree)
    return found


def _cycles(at_import: bool, allowed: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    # a package above the importing module is already being imported: no edge
    graph = {m: {d for name in imports(m, at_import) for d in _resolve(name)
                 if d != m and not m.startswith(d + ".") and (m, d) not in allowed} for m in MODULES}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []
    cycles: list[str] = []

    def walk(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(" -> ".join([*path[path.index(d):], d]))
            elif d not in state:
                walk(d)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m)
    assert "harness.files" in graph["harness.run.record_file"]  # the walk sees real edges
    return cycles


def test_no_import_circle_among_the_harness_modules():
    assert _cycles(at_import=True) == []


def test_no_circle_either_through_a_lazy_or_a_type_only_import():
    # the record's old circle ran through both: the disk module -> observe/hooks (type only) -> results/record
    # -> the disk module (inside write); the report's page and the round's page closed one inside a function
    assert _cycles(at_import=False) == []


# results/'s layers, in the order they may import: each any before it, never one after it
RESULTS_LAYERS = ("read", "analysis", "report")


def _results_layer(name: str) -> int | None:
    parts = name.split(".")
    if parts[:2] != ["harness", "results"] or len(parts) < 3 or parts[2] not in RESULTS_LAYERS:
        return None
    return RESULTS_LAYERS.index(parts[2])


def test_every_results_module_is_in_a_layer():
    flat = sorted(m for m in MODULES if m.startswith("harness.results.") and _results_layer(m) is None)
    assert flat == []


def test_results_layers_import_one_way_at_import_time_and_inside_functions():
    """read/ imports nothing of analysis/ or report/, analysis/ nothing of report/ (docs/architecture.md)."""
    assert "harness.results.analysis.stats" in imports("harness.results.report.render", at_import=True)
    bad = sorted(f"{m} imports {name}" for m in MODULES if (own := _results_layer(m)) is not None
                 for name in imports(m, at_import=False)
                 if (theirs := _results_layer(name)) is not None and theirs > own)
    assert bad == []


def test_only_the_registry_imports_a_model_package():
    bad = sorted(f"{m} imports {name}" for m in MODULES if m != "harness.registry"
                 for name in imports(m, at_import=False) if name.split(".")[0] == "reference_models")
    assert bad == []


READERS = ("harness.results", "harness.rounds")  # what reads logs and trees: no model, no run


def test_results_never_imports_the_round_view_built_on_it():
    """harness.rounds (a published round's view) builds on results/'s three layers; results/ never imports
    it, so the round view is one package that can be read, changed or left out alone."""
    assert "harness.results.report.html" in imports("harness.rounds.page", at_import=True)
    bad = sorted(f"{m} imports {name}" for m in MODULES if m.startswith("harness.results")
                 for name in imports(m, at_import=False) if name.startswith("harness.rounds"))
    assert bad == []


# the leaves every layer may use: standard library underneath, nothing of the harness
LEAVES = ("harness.record", "harness.files", "harness.signals", "harness.errors", "harness.usage")


def test_results_never_imports_the_registry_and_asks_for_the_table_it_was_not_handed():
    """results/ learns the harness's own models from the table a command publishes; a caller that reads a
    log without publishing it is told so, rather than checked against another ruleset."""
    bad = sorted(f"{m} imports {name}" for m in MODULES if m.startswith(READERS)
                 for name in imports(m, at_import=False) if name.split(".")[:2] == ["harness", "registry"]
                 or name.startswith("reference_models"))
    assert bad == []
    from harness import registry
    from harness.results.read import own

    source = own._source
    own._source = None
    try:
        with pytest.raises(RuntimeError, match="registry.publish"):
            own.by_benchmark("ncf")
    finally:
        own._source = source
    registry.publish()
    entry = own.by_benchmark("ncf")
    assert entry is not None and entry.name == "ncf" and entry.ruleset == registry.get("ncf").task.ruleset


@pytest.mark.parametrize("leaf", LEAVES)
def test_a_leaf_imports_nothing_of_the_harness(leaf):
    """The record, the file writer and the signal handling are leaves: any layer may use them because
    they import nothing back, at import time or inside a function."""
    assert {n for n in imports(leaf, at_import=False) if n.startswith("harness")} == set()


def test_the_usage_leaf_imports_the_standard_library_alone():
    """scripts/ read their usage through harness/usage.py with the checkout on their path and nothing else:
    a plain PyTorch baseline has none of the harness's dependencies to lean on."""
    used = {name.split(".")[0] for name in imports("harness.usage", at_import=False)}
    assert "ast" in used and used <= set(sys.stdlib_module_names)


def test_results_imports_nothing_of_the_run_or_its_hooks_with_no_exception():
    bad = sorted(f"{m} imports {name}" for m in MODULES if m.startswith(READERS)
                 for name in imports(m, at_import=False) if name.startswith(("harness.run", "harness.observe")))
    assert bad == []


def _imported_names(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_no_model_package_imports_another():
    """A model's code shared with another lives in a shared package (vision/, detection/, text/, or a
    family's such as bert/ and txl/), so changing one model cannot change another's losses unseen."""
    from harness import registry

    models = {p.__name__.rpartition(".")[2] for p in registry.PACKAGES}
    bad = set()
    for name in models:
        for path in (REPO / "reference_models" / name).rglob("*.py"):
            for imported in _imported_names(path):
                parts = imported.split(".")
                if len(parts) > 1 and parts[0] == "reference_models" and parts[1] in models - {name}:
                    bad.add(f"{path.relative_to(REPO)} imports {imported}")
    assert not bad, sorted(bad)
