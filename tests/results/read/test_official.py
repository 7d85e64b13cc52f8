"""Issue 23's acceptance: on every fixture round (../shared/fixtures/mlperf_trees, v0.5-v4.0) the report and
`harness.check` say what mlperf-logging's own result_summarizer, rcp_checker and compliance checker say, run
side by side on the same files: per run its minutes, whether it counts, its convergence figure and unit, its
check verdict; per submission folder its score. Nothing here is a figure written down: every expected value
is computed by the official code (scripts/tools/official_compare.official_side) in the test."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, run_cli

_spec = importlib.util.spec_from_file_location("official_compare", REPO / "scripts" / "tools" / "official_compare.py")
compare = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compare  # its dataclasses look their module up
_spec.loader.exec_module(compare)

ROUNDS = ["v0.6", "v0.7", "v2.1", "v3.0", "v4.0"]


@pytest.fixture(scope="module")
def official(trees_dir):
    """The official tools on every benchmark folder of the fixture trees, by folder."""
    out = {}
    for path in compare.benchmark_folders(trees_dir):
        round_ = compare.round_in_path(path / "result_0.txt")
        folder = compare.Folder(str(path), round_, compare.ruleset_of_round(round_), path.name,
                                sorted(str(p) for p in path.glob("result_*.txt")))
        compare.official_side(folder)
        out[str(path.resolve())] = folder
    return out


@pytest.fixture(scope="module")
def harness(trees_dir):
    report = run_cli("harness.report", str(trees_dir), "--json", "-")
    check = run_cli("harness.check", str(trees_dir))
    verdicts = {}
    for line in check.stdout.splitlines():
        parts = line.split()
        if len(parts) > 1 and parts[1].endswith(".txt"):
            verdicts[str(Path(parts[1]).resolve())] = parts[0]
    return json.loads(report.stdout), verdicts


def _same(a, b, ruleset):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= compare.V06_TOLERANCE if ruleset == "0.6.0" else a == b


@pytest.mark.parametrize("round_", ROUNDS)
def test_each_run_s_minutes_convergence_and_verdict_are_the_official_tools(official, harness, round_):
    report, verdicts = harness
    runs = {str(Path(r["path"]).resolve()): r for r in report["runs"]}
    folders = [f for f in official.values() if f.round == round_]
    assert folders, f"no {round_} folder in the fixtures"
    for folder in folders:
        assert isinstance(folder.score, float), folder.score  # the official tools scored it
        for log in folder.logs:
            run, off = runs[str(Path(log).resolve())], folder.official[log]
            assert run["counted"] == ("minutes" in off), log  # the summarizer keeps what its checker passes
            if "minutes" in off:
                assert _same(run["time_to_train_min"], off["minutes"], folder.ruleset), log
            assert verdicts[str(Path(log).resolve())] == {"pass": "PASS", "warned": "WARN", "fail": "FAIL"}[off["check"]], log
            # the report keeps the checker's pass and lists its warnings beside it
            assert run["check"] == {"warned": "pass"}.get(off["check"], off["check"]), log
            assert run["check_ruleset"] == folder.ruleset, log
            if folder.ruleset != "0.6.0":  # the RCP checker reads :::MLLOG files only
                want = off["convergence"]
                assert run["epochs_to_converge"] == want, log
                units = compare.units_of(log, want, folder.benchmark, folder.ruleset) if want is not None else []
                assert want is None or run["epoch_unit"] in units, (log, run["epoch_unit"], units)


@pytest.mark.parametrize("round_", ROUNDS)
def test_each_folder_is_one_group_scored_as_the_summarizer_scores_it(official, harness, round_):
    report, _ = harness
    groups = {g["folder"]: g for g in report["groups"] if g.get("folder")}
    for folder in (f for f in official.values() if f.round == round_):
        group = groups[str(Path(folder.path).resolve())]
        assert group["runs"] == len(folder.logs)
        assert _same(group["score"]["minutes"], folder.score, folder.ruleset), folder.path
        assert group["score"]["scaling"] == folder.scaling  # scaling.json, where the folder has one


def test_v05_has_no_official_tools_and_is_said_to_have_none(harness, trees_dir):
    report, verdicts = harness
    v05 = [r for r in report["runs"] if r["round"] == "v0.5"]
    assert v05 and all(r["check"] == "unchecked" and r["check_ruleset"] == "v0.5" for r in v05)
    assert {verdicts[str(Path(r["path"]).resolve())] for r in v05} == {"SKIP"}


def test_the_comparison_script_finds_no_disagreement_on_the_fixtures(trees_dir, tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "tools" / "official_compare.py"), str(trees_dir),
                           "--json", str(tmp_path / "c.json")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["disagreements"] == []
    for round_ in ROUNDS:
        counts = data["rounds"][round_]
        assert counts["checks agree"] == counts["logs"]
        assert counts["runs whose minutes and scoring agree"] == counts["logs"]
        assert counts["scores agree"] == counts["folders"]
