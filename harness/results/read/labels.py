"""Precision labels: the base precision a run trained in, then the path its step ran.

result.json's `precision`, bench.jsonl's and the tables' rows carry one label: the base precision first
(fp32, tf32, amp, bf16, optionally +master for fp16 weights), then the parts of the path the step ran,
each after a "+": "amp" (the eager step), "tf32+graph" (replayed from a CUDA graph),
"amp+compile(reduce-overhead)", "amp+master+compile+graph". Tables compare like paths with like, and
each fast path with the eager step of its base precision (harness/results/analysis/throughput.py).

    python -c "from harness.results.read.labels import split_label; print(split_label('amp+compile+graph'))"
"""
from __future__ import annotations

import re

EAGER = "eager"
BASE_PARTS = ("master",)  # parts of a label that belong to its base precision, not to its path
_PARTS = re.compile(r"\+(?![^()]*\))")  # a "+" outside parentheses: compile(...) is one part


def split_label(precision: str) -> tuple[str, str]:
    """(base precision, path) of a precision label: "amp+master+compile(reduce-overhead)+graph" ->
    ("amp+master", "compile(reduce-overhead)+graph"); "tf32" -> ("tf32", "eager"). The base comes first
    (fp32, tf32, amp, bf16, optionally +master), then the parts of the path the step ran."""
    base, *parts = _PARTS.split(precision)
    while parts and parts[0] in BASE_PARTS:
        base += "+" + parts.pop(0)
    return base, "+".join(p for p in parts if p and p != EAGER) or EAGER


def join_label(base: str, path: str) -> str:
    """The label of a base precision run on a path: "amp" for the eager step, else "amp+graph"."""
    return base if path == EAGER else f"{base}+{path}"
