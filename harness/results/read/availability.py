"""Who submitted a system of a submission tree, and in which of MLPerf's availability categories.

MLPerf publishes each round's results split by division and then by availability: "Available
on-premise", "Available cloud", "Preview" and "Research, Development, or Internal (RDI)", the four values
mlperf_logging's system_desc_checker accepts in a system description's `status` from 4.0 on. Earlier
descriptions write it freely (`onprem`, `Available on premise`, `cloud`, `available`, `research`): each is
read into its category by its words, and a status no word matches is kept as written. The submitter is
the description's `submitter` (`NVIDIA+CoreWeave` in NVIDIA's folder), else the organisation's folder.

    python -m harness.results.read.availability BENCHMARK_FOLDER...
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.results.read.formats import loads

ON_PREMISE = "Available on-premise"
CLOUD = "Available cloud"
PREVIEW = "Preview"
RDI = "Research, Development, or Internal (RDI)"
ORDER = (ON_PREMISE, CLOUD, PREVIEW, RDI)  # MLPerf's order of the categories in its results tables
UNKNOWN = "n/a"
SHORT = {ON_PREMISE: "available on-premise", CLOUD: "available cloud", PREVIEW: "preview", RDI: "RDI",
         UNKNOWN: "availability not stated"}


@dataclass(frozen=True)
class Listing:
    submitter: str
    status: Optional[str]  # as the system description writes it
    availability: str  # one of ORDER, the status as written, or n/a
    system_name: Optional[str]
    nodes: Optional[int] = None  # number_of_nodes (v0.7 on; some write "number of nodes"), else None
    per_node: Optional[int] = None  # accelerators_per_node


def category(status: Any) -> str:
    """MLPerf's availability category of a description's `status`."""
    if not isinstance(status, str) or not status.strip():
        return UNKNOWN
    text = status.strip().lower()
    for name in ORDER:
        if text == name.lower():
            return name
    words = set(text.replace("-", " ").replace(",", " ").split())
    if "preview" in words:
        return PREVIEW
    if words & {"research", "rdi", "internal", "development"}:
        return RDI
    if "cloud" in words:
        return CLOUD
    if text in ("onprem", "available") or "prem" in text or "premise" in words:
        return ON_PREMISE
    return status.strip()


def order(availability: str) -> int:
    return ORDER.index(availability) if availability in ORDER else len(ORDER)


@functools.lru_cache(maxsize=1024)
def listing(folder: str) -> Listing:
    """The listing of the system a benchmark folder `<org>/results/<system>/<benchmark>` belongs to."""
    bench = Path(folder)
    system_dir = bench.parent
    org = system_dir.parent.parent.name if system_dir.parent.name == "results" else "?"
    data = _read(system_dir.parent.parent / "systems" / f"{system_dir.name}.json")
    if data is None:
        data = _read(system_dir / "entry.json") or {}
    submitter = data.get("submitter")
    status = data.get("status")
    name = data.get("system_name")
    return Listing(submitter.strip() if isinstance(submitter, str) and submitter.strip() else org,
                   status.strip() if isinstance(status, str) else None, category(status),
                   name.strip() if isinstance(name, str) and name.strip() else None,
                   _int(data.get("number_of_nodes", data.get("number of nodes"))), _int(data.get("accelerators_per_node")))


def _int(x: Any) -> Optional[int]:
    """A count as descriptions write it (4, "4", " 4 "), else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    return int(x) if isinstance(x, str) and x.strip().isdigit() else None


def _read(path: Path) -> Optional[dict]:
    """A JSON system description; None where there is none or it is not JSON (v0.6's key: value lines,
    which name no status)."""
    try:
        data = loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def main(argv: list[str]) -> int:
    for folder in argv:
        print(f"{folder}: {listing(str(Path(folder).resolve()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
