"""mode=throughput bounded in time, not steps: a timed warm-up, then windows whose step count comes from
the warm-up's measured step time, a console line per window, and a fixed step count for those who ask.

    python -m harness.train model=ncf +debug=ncf device=cpu mode=throughput warmup_s=0.5 throughput_window_s=0.4
"""
from __future__ import annotations

import json
import re
import time

from tests.helpers import run_cli

NCF = ["model=ncf", "+debug=ncf", "device=cpu", "seed=1", "progress=false", "tensorboard=false"]


def _result(out) -> dict:
    (path,) = out.rglob("result.json")
    return json.loads(path.read_text())


def test_windows_are_sized_in_seconds_from_the_warm_up_and_each_says_its_figure(tmp_path):
    t0 = time.monotonic()
    proc = run_cli("harness.train", *NCF, "mode=throughput", "warmup_s=0.5", "throughput_window_s=0.4",
                   "throughput_repeats=3", f"data_root={tmp_path / 'data'}", f"output_root={tmp_path / 'out'}",
                   timeout=300)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    warm = re.search(r"warm-up: (\d+) steps in ([\d.]+) s; a step takes ([\d.e+-]+) s, so (\d+) steps a window", said)
    assert warm, said
    per_window = int(warm.group(4))
    step_s = float(warm.group(3))
    assert per_window == 1 if step_s > 0.4 else abs(per_window * step_s - 0.4) <= step_s  # 0.4 s a window, to a step
    lines = re.findall(r"window (\d)/3: (\d+) steps in ([\d.]+) s, ([\d,.]+) samples/s", said)
    assert [int(w) for w, *_ in lines] == [1, 2, 3] and all(int(n) == per_window for _, n, _, _ in lines)
    result = _result(tmp_path / "out")
    assert result["status"] == "success" and result["throughput_steps"] == per_window  # the steps a window counted
    assert [w["steps"] for w in result["epochs"]] == [per_window] * 3 and result["throughput"] > 0
    assert wall < 120  # seconds of measuring, whatever the batch: not 20 + 200 x 5 steps


def test_a_fixed_step_count_still_counts_steps(tmp_path):
    proc = run_cli("harness.train", *NCF, "mode=throughput", "throughput_steps=3", "throughput_repeats=2",
                   f"data_root={tmp_path / 'data'}", f"output_root={tmp_path / 'out'}", timeout=300)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "warm-up:" not in said  # no timed warm-up where the steps are counted
    assert re.findall(r"window (\d)/2: (\d+) steps", said) == [("1", "3"), ("2", "3")]
    result = _result(tmp_path / "out")
    assert result["throughput_steps"] == 3 and [w["steps"] for w in result["epochs"]] == [3, 3]
