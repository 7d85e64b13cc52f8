"""scripts/lab/feed_sidebyside.py on the CPU at the debug presets: one process measures a second tree
(here a copy of this one, where the device call has main's) and this one, and the table names both,
each measured with its own tree's modules."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e


def test_both_trees_are_measured_each_with_its_own_modules(tmp_path):
    base = tmp_path / "base"
    for part in ("harness", "reference_models", "scripts", "conf"):
        shutil.copytree(REPO / part, base / part, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "lab" / "feed_sidebyside.py"), str(tmp_path / "out"),
                          "ncf", "--base", str(base), "--data", str(tmp_path / "data"), "--smoke"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "feed_sidebyside.json").read_text())
    assert [(r["name"], r["tree"]) for r in results] == [("ncf", "main"), ("ncf", "this tree")]
    assert results[0]["modules"].startswith(str(base)) and results[1]["modules"].startswith(str(REPO))
    assert all(r["real"] > 0 and r["synthetic"] > 0 and "error" not in r for r in results)
    table = (tmp_path / "out" / "feed_sidebyside.md").read_text()
    assert "| ncf | main |" in table and "| ncf | this tree |" in table


def test_a_model_that_cannot_finish_before_the_deadline_is_skipped_for_both_trees(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "lab" / "feed_sidebyside.py"), str(tmp_path / "out"),
                          "ncf", "--base", str(REPO), "--data", str(tmp_path / "data"), "--smoke", "--deadline", "0.5"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "feed_sidebyside.json").read_text())
    assert len(results) == 1 and results[0]["skipped"].startswith("not run:")
