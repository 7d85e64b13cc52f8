"""A submission tree's description of the system a result file ran on: world size, accelerator, framework.

Layouts, as MLPerf publishes them:

    v0.6 on:  <Org>/results/<system>/<benchmark>/result_<i>.txt  with  <Org>/systems/<system>.json
    v0.5:     .../results/<system>/<benchmark>/result_<i>.txt     with  .../results/<system>/entry.json

A system file is JSON (v0.7 on: number_of_nodes, accelerators_per_node, accelerator_model_name,
framework, all strings), or, in v0.6, one `key: {"value": ..., "metadata": ...}` line per key whose
`entry` value is a Python-literal dict string and its `nodes` another one: those are read with
ast.literal_eval, which builds literals only and never runs code. v0.5's entry.json lists `nodes`
(num_nodes, accelerator, num_accelerators). World size = nodes x accelerators per node (a missing node
count means 1), but where the accelerator's name states the count (a TPU slice, "tpuv3-32") that count is the
node's whole; no accelerators means a CPU system, world size 0. v0.6 logs carry the same entry as
`submission_entry`, which the parser reads through `from_entry` when the tree has no system file.

Where a score belongs (`place_of`): in a tree, to the benchmark folder
`<org>/results/<system>/<benchmark>` in its division (the system file's `division`, else the log's
`submission_division`), as mlperf_logging's result_summarizer scores one folder at a time, whatever
platform strings or batch sizes its logs state. A folder's `scaling.json` holds the factor the
official score carries (`scaling_factor`: the review committee's, or, from v2.1, the RCP checker's
normalisation of a submission that converges faster than the reference mean); the summarizer reads
it from v2.0 on.

    python -m harness.check.show system RESULT_FILE...    # what the tree says about each file's system
"""
from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.results.read.formats import loads
from harness.results.read.runfiles import read_text
from harness.results.read.summary import one_line

MAX_LITERAL = 100_000  # characters: a system description is a few hundred; nothing bigger is evaluated
FIRST_50 = "first_50_success_file"  # v0.5 NCF: the runs the submitter scored


@dataclass(frozen=True)
class System:
    name: Optional[str]
    world_size: Optional[int]
    accelerator: Optional[str]
    framework: Optional[str]
    source: str  # the file it was read from
    scored: Optional[frozenset[str]] = None  # resolved result files the submitter's first_50_success_file lists
    hardware: Optional[str] = None  # v0.5/v0.6 entry's "hardware": the platform where the log names none
    division: Optional[str] = None  # v0.7 on: "closed" or "open", as the result_summarizer reads it


@dataclass(frozen=True)
class Place:
    """The folder of a submission tree that a result file's score belongs to."""

    folder: str  # the benchmark folder, resolved
    org: str  # the folder above results/ (the submitter, or v0.5's submission)
    system: str  # the system folder's name
    benchmark: str  # the benchmark folder's name, with the summarizer's alias (mask -> maskrcnn)


def place_of(result_file: str | Path) -> Optional[Place]:
    """Where a result_*.txt sits in a submission tree, or None when it is not in one."""
    p = Path(result_file).resolve()
    bench_dir = p.parent
    system_dir = bench_dir.parent
    if system_dir.parent.name != "results" or not p.name.startswith("result_"):
        return None
    return Place(str(bench_dir), system_dir.parent.parent.name, system_dir.name, benchmark_alias(bench_dir.name))


def benchmark_alias(folder_name: str) -> str:
    """The benchmark a results folder holds, by the summarizer's own alias table (v0.5's `mask`)."""
    # imported here: the summarizer pulls in pandas, which only tree readers need
    from mlperf_logging.result_summarizer.result_summarizer import _benchmark_alias

    return _benchmark_alias(folder_name)


@functools.lru_cache(maxsize=1024)
def scaling_factor(folder: str) -> tuple[float, Optional[str]]:
    """(the factor a benchmark folder's scaling.json gives its score, a note): 1.0 without the file;
    a file that cannot be read, or whose factor is not a positive number, is named and not applied
    (the official summarizer would stop on it)."""
    path = Path(folder) / "scaling.json"
    if not path.is_file():
        return 1.0, None
    try:
        data = loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as err:
        return 1.0, f"{path} cannot be read ({err}): not applied"
    factor = data.get("scaling_factor") if isinstance(data, dict) else None
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0 or factor == float("inf"):
        return 1.0, f"{path} gives no positive scaling_factor ({factor!r}): not applied"
    return float(factor), None


def literal(text: Any) -> Any:
    """A Python literal from its text (v0.6's dict strings), or None; never evaluates code."""
    if not isinstance(text, str):
        return text
    if len(text) > MAX_LITERAL:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _count(x: Any) -> Optional[int]:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and re.fullmatch(r"\s*\d+\s*", x):
        return int(x)
    return None


def _accel_name(name: Any, count: Optional[int]) -> Optional[str]:
    if count == 0:
        return "CPU"
    if isinstance(name, str) and name.strip() and name.strip().upper() not in ("NA", "N/A", "NONE"):
        return name.strip()
    return None


def world(nodes: Any, per_node: Any) -> Optional[int]:
    per = _count(per_node)
    if per is None:
        return None
    n = _count(nodes)
    return (1 if n is None else n) * per


def from_entry(entry: Any, source: str, name: Optional[str] = None) -> Optional[System]:
    """A v0.6 `entry` (dict or its literal string, `nodes` a dict, a list or a literal string) or a
    v0.5 entry.json."""
    entry = literal(entry)
    if not isinstance(entry, dict):
        return None
    hardware = _text(entry.get("hardware"))
    nodes = literal(entry.get("nodes"))
    nodes = [nodes] if isinstance(nodes, dict) else nodes if isinstance(nodes, list) else []
    total, accels = 0, []
    for node in (literal(n) for n in nodes):
        if not isinstance(node, dict):
            continue
        per = _count(node.get("num_accelerators"))
        named = re.search(r"-(\d+)$", str(node.get("accelerator") or "").strip())
        # Google's v0.5 TPU entries name the slice ("tpuv3-512") and count its cores in num_accelerators over
        # num_nodes host VMs (32 for that slice): the slice is the count, not one per node (16,384 read so)
        size = per if named and per is not None and int(named.group(1)) == per else \
            world(node.get("num_nodes"), node.get("num_accelerators"))
        if size is None:
            return System(name, None, None, _text(entry.get("framework")), source, hardware=hardware)
        total += size
        accels.append(_accel_name(node.get("accelerator"), _count(node.get("num_accelerators"))))
    kinds = sorted({a for a in accels if a})
    return System(name, total if nodes else None, " + ".join(kinds) or None, _text(entry.get("framework")), source,
                  hardware=hardware)


def division(x: Any) -> Optional[str]:
    """'closed' or 'open' as the rules name them, whatever the case a submitter wrote ("Closed"); PCL's v1.0
    system files write "close" (their logs "closed"), which the summarizer's table keeps as a third division."""
    text = _text(x)
    return None if not text else "closed" if text.lower() == "close" else text.lower()


def _text(x: Any) -> Optional[str]:
    return one_line(x).strip() if isinstance(x, str) and x.strip() else None


@functools.lru_cache(maxsize=256)
def read_system(path: str) -> Optional[System]:
    """A system description file in any round's format, or None when it cannot be read."""
    try:
        text = read_text(path, errors="replace")  # a pipe named as a system file would wait for ever
    except OSError:
        return None
    name = Path(path).stem
    try:
        data = loads(text)
    except ValueError:
        data = _key_lines(text)
    if not isinstance(data, dict):
        return None
    if "number_of_nodes" in data or "accelerators_per_node" in data:
        per = _count(data.get("accelerators_per_node"))
        nodes = data.get("number_of_nodes", data.get("number of nodes"))  # v0.7 Dell EMC writes the spaces
        return System(_text(data.get("system_name")) or name, world(nodes, per),
                      _accel_name(data.get("accelerator_model_name"), per), _text(data.get("framework")), path,
                      division=division(data.get("division")))
    if "entry" in data:
        return from_entry(data["entry"], path, name)
    if "nodes" in data:
        return from_entry(data, path, name)
    return None


def _key_lines(text: str) -> Optional[dict]:
    """v0.6's `key: {"value": ...}` lines as {key: value}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*([A-Za-z0-9_]+):\s*(\{.*\})\s*$", line)
        if not m:
            continue
        try:
            body = loads(m.group(2))
        except ValueError:
            continue
        if isinstance(body, dict) and "value" in body:
            out[m.group(1)] = body["value"]
    return out or None


def system_for(result_file: str | Path) -> Optional[System]:
    """The system a result_*.txt of a submission tree ran on, or None outside a tree."""
    p = Path(result_file).resolve()
    system_dir = p.parent.parent
    if system_dir.parent.name == "results":
        candidate = system_dir.parent.parent / "systems" / f"{system_dir.name}.json"
        if candidate.is_file():
            return _with_scored(read_system(str(candidate)), system_dir)
    entry = system_dir / "entry.json"
    if entry.is_file():
        found = read_system(str(entry))
        if found is not None:
            found = System(system_dir.name, found.world_size, found.accelerator, found.framework, found.source,
                           hardware=found.hardware)
        return _with_scored(found, system_dir)
    return None


def _with_scored(system: Optional[System], system_dir: Path) -> Optional[System]:
    if system is None:
        return None
    listed = _first_50(str(system_dir))
    if listed is None:
        return system
    return System(system.name, system.world_size, system.accelerator, system.framework, system.source, listed,
                  system.hardware, system.division)


@functools.lru_cache(maxsize=256)
def _first_50(system_dir: str) -> Optional[frozenset[str]]:
    path = Path(system_dir) / FIRST_50
    try:
        names = path.read_text(encoding="latin-1").split()
    except OSError:
        return None
    root = Path(system_dir).resolve()
    # each name is looked up under the system folder; one that leads outside it is ignored
    found = {os.path.realpath(root / n) for n in names}  # a name that loops is matched by no log
    return frozenset(f for f in found if f.startswith(str(root) + "/"))
