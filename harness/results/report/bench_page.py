"""The GPU benchmark suite's results as one self-contained HTML page (OUT/results.html): the machine
that ran the cells (as harness.bench recorded it in bench.json), then the sections results.md holds
(throughput, scaling efficiency, precision gain, fast path vs eager, fallbacks, failed cells), each
chart drawn under its table as a PNG data URI. Built from the report page's pieces
(harness/results/report/html.py): the same escaped Markdown subset, styles and Content-Security-Policy, so
the page loads nothing and runs no script.

    python -m harness.bench --tables-only --out outputs/bench/<run>     # rebuilds it with the tables
"""
from __future__ import annotations

import base64
from typing import Any, Mapping

from harness.results.report import html
from harness.results.report.render import markdown_table

SMOKE = "Smoke run: debug presets, not a benchmark"
GPU_ONLY = ("accelerator", "gpu_count", "driver", "cuda", "cudnn")  # facts of a GPU the cells did not run on


def ran_on(meta: dict[str, Any]) -> str:
    """The device the cells ran on: bench.json's `device`, else (a folder written before it was recorded) the
    machine's GPU, or CPU."""
    if meta.get("device"):
        return str(meta["device"])
    if meta.get("gpu_count") == 0 or meta.get("machine") == "CPU":
        return "CPU"
    return str(meta.get("accelerator") or meta.get("machine") or "?")


def title(meta: dict[str, Any]) -> str:
    """'GPU benchmark suite: 2x NVIDIA H200', or, for --smoke, 'GPU benchmark suite smoke run: debug presets, not a
    benchmark: CPU'."""
    kind = f"GPU benchmark suite {SMOKE[0].lower()}{SMOKE[1:]}" if meta.get("smoke") else "GPU benchmark suite"
    return f"{kind}: {meta.get('machine', '?')}"


# bench.py's machine() keys in the order a reader looks for them, with the words the page shows
MACHINE = (("machine", "machine"), ("device", "cells ran on"), ("accelerator", "GPU"), ("gpu_count", "GPUs"),
           ("driver", "driver"), ("torch", "torch"), ("cuda", "CUDA"), ("cudnn", "cuDNN"), ("python", "Python"), ("host", "host"),
           ("cpu", "CPU"), ("date", "date"), ("command", "command"))
TALLIES = ("cells_run", "cells_failed", "minutes", "cells", "smoke")  # the summary's own counts, said in its text
# the machine's facts read as text (a driver version is not a number to align); the wide throughput
# table's headers may wrap, so that its columns fit a laptop's window
CSS = """
table[data-section="Machine"] td.num { text-align: left; }
th { white-space: normal; vertical-align: bottom; }
h1 + h2[id^="smoke-run"], h2[id^="smoke-run"] { background: #fff3cd; border: 2px solid #c77c00; padding: 8px 12px; }
"""


def machine_rows(meta: Mapping[str, Any]) -> list[list[str]]:
    """(what, value) of every machine fact the bench recorded: the known ones first, then any other."""
    known = dict(MACHINE)
    meta = {**meta, "device": ran_on(dict(meta))}
    hidden = GPU_ONLY if meta["device"] == "CPU" else ()  # a CPU run's page names no GPU, driver or CUDA
    keys = [k for k, _ in MACHINE if k in meta and k not in hidden] + [
        k for k in meta if k not in known and k not in TALLIES and isinstance(meta[k], (str, int, float, type(None)))]
    return [[known.get(k, k), "n/a" if meta[k] is None else str(meta[k])] for k in keys]


def page(meta: Mapping[str, Any], sections: str, charts: Mapping[str, bytes]) -> str:
    """The page's HTML: `sections` is the Markdown results.md holds under its heading; `charts` the PNGs
    its `![caption](name.png)` lines name."""
    machine = markdown_table(["what", "value"], machine_rows(meta))
    images = {name: "data:image/png;base64," + base64.b64encode(png).decode("ascii") for name, png in charts.items()}
    banner = ""
    if sections.startswith(f"## {SMOKE}\n"):  # a smoke run's banner above everything, the machine too
        heading, text, sections = sections.split("\n\n", 2)
        banner = f"{heading}\n\n{text}\n\n"
    return html.page(title(dict(meta)), [], [], [], f"{banner}## Machine\n\n{machine}\n\n{sections}", images, CSS)
