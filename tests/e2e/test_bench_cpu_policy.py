"""scripts/tools/bench_cpu_policy.py at tiny settings: a row per model, load and policy, the ratios of
loaded to idle, and one JSON line per run (the real figures: docs/benchmarks/cpu_policy_*.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def test_the_cpu_policy_benchmark_writes_its_table(tmp_path):
    out = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "tools" / "bench_cpu_policy.py"), "--models", "ncf", "--seeds", "1",
         "--policies", "old", "new", "--repeats", "1", "--set", "+debug=ncf", f"data_root={tmp_path / 'data'}",
         "--root", str(tmp_path / "runs"), "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ncf |")]
    assert [r.split("|")[3:5] for r in rows] == [[" idle ", " old "], [" idle ", " new "],
                                                 [" one-core ", " old "], [" one-core ", " new "]]
    assert all(" success " in r or " aborted " in r for r in rows)  # every run finished (the debug preset's cap)
    ratio = next(line for line in text.splitlines() if line.startswith("- ncf, 1 rank(s), policy new: "))
    assert "epoch time " in ratio and ratio.endswith("x")  # time to train too, where the runs converged
    runs = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(runs) == 4 and {r["policy"] for r in runs} == {"old", "new"}
    old = [r for r in runs if r["policy"] == "old"]
    assert all(r["threads"] == len(os.sched_getaffinity(0)) for r in old)  # OpenMP's default count
    loaded = [r for r in runs if r["load"] == "one-core"]
    assert all(r["others_start_pct"] >= 50 for r in loaded)  # the spinner was running and was seen
