"""`python -m harness.check`: the official checker, the right ruleset per log, no stray files."""
from __future__ import annotations

from pathlib import Path

import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from tests.helpers import REPO, run_cli
from harness.check import check_log, pick_rules

NCF_RULES = REPO / "reference_models" / "ncf" / "rules_0.7.0.yaml"


def test_fixtures_pass_or_fail_as_the_official_checker_decides(fixtures_dir, tmp_path):
    out = run_cli("harness.check", str(fixtures_dir), cwd=tmp_path)
    lines = out.stdout.splitlines()
    assert out.returncode == 1
    assert sum(l.startswith("PASS") for l in lines) == 20
    fails = [l for l in lines if l.startswith("FAIL")]
    assert len(fails) == 5 and all("alibaba_v100-1280" in l and "time_s" in l for l in fails)
    assert lines[-1] == "25 log(s): 20 passed, 5 failed"
    assert list(tmp_path.iterdir()) == []  # no compliance_checker.log or anything else left behind


def test_ruleset_per_benchmark():
    assert pick_rules("gnmt") == ("0.7.0", "0.7.0", "training_0.7.0/common.yaml")
    assert pick_rules("ncf") == ("0.7.0", "harness-ncf-0.7.0", str(NCF_RULES))
    assert pick_rules("resnet", "1.0.0")[0] == "1.0.0"


def test_a_failing_log_names_the_failed_check(fixtures_dir, tmp_path):
    text = (fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt").read_text(encoding="latin-1")
    missed = tmp_path / "result_0.txt"  # the same run, but its best BLEU below 0.24
    missed.write_text(text.replace('"value": 0.24350000000000002', '"value": 0.2390'), encoding="latin-1")
    result = check_log(missed)
    assert not result.passed
    assert "eval_accuracy" in result.reason and "0.240" in result.reason


def test_ncf_rules_file_keeps_the_official_0_7_0_common_rules():
    """Part 1 of the harness rules must be upstream's common.yaml but for the two documented edits."""
    upstream_path = Path(mlp_compliance.__file__).parent / "training_0.7.0" / "common.yaml"
    upstream = {r["KEY"]["NAME"]: r["KEY"] for r in yaml.safe_load(upstream_path.read_text()) if "KEY" in r}
    ours = yaml.safe_load(NCF_RULES.read_text())
    ours_common = {}
    for r in ours:
        if "KEY" in r and r["KEY"]["NAME"] in upstream and r["KEY"]["NAME"] not in ours_common:
            ours_common[r["KEY"]["NAME"]] = r["KEY"]
    assert set(ours_common) == set(upstream)
    for name, rule in upstream.items():
        if name == "submission_benchmark":
            assert ours_common[name]["CHECK"].strip() == "v['value'] == 'ncf'"
        elif name == "submission_division":
            assert "POST" not in ours_common[name] and ours_common[name]["CHECK"] == rule["CHECK"]
        else:
            assert ours_common[name] == rule, name
    begin = [r for r in ours if "BEGIN" in r]
    assert begin == [r for r in yaml.safe_load(upstream_path.read_text()) if "BEGIN" in r]
