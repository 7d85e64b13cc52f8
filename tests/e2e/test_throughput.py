"""mode=throughput: synthetic batches, no dataset, no MLPerf log; repeated windows and their median."""
from __future__ import annotations

import json
import statistics

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("model,extra", [
    ("ncf", ["model.synthetic.n_users=5000", "model.synthetic.n_items=2000"]),
    ("gnmt", ["model.hidden_size=32", "model.vocab_size=512", "model.batch_size=16"]),
])
def test_throughput_mode_measures_windows_without_data(tmp_path, model, extra):
    out = run_cli(
        "harness.train", f"model={model}", "mode=throughput", "warmup_steps=2", "throughput_steps=3",
        "throughput_repeats=3", "output_root=out", "data_root=nowhere", "progress=false", *extra, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    (result_path,) = (tmp_path / "out").rglob("result.json")
    result = json.loads(result_path.read_text())
    assert result["mode"] == "throughput" and result["status"] == "success"
    windows = [e["throughput"] for e in result["epochs"]]
    assert len(windows) == 3 and all(w > 0 for w in windows)
    assert result["throughput"] == statistics.median(windows)
    assert not (tmp_path / "nowhere").exists()  # no dataset generated or read
    assert not list((tmp_path / "out").rglob("mlperf.log"))
    assert "THROUGHPUT:" in out.stdout
