"""`python -m harness.check`: the official checker, the ruleset of each log's round, short lines, no stray files."""
from __future__ import annotations

import json
import os
import re
import time
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
    assert "25 log(s): 20 passed, 5 failed" in lines
    # the folder is v0.7's (mlperf_v0.7_results): its round's ruleset, and the summary says why
    assert lines[-1] == "  ruleset 0.7.0: 25 log(s), v0.7 in the path"
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


def _fixture_text(fixtures_dir) -> str:
    return (fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt").read_text(encoding="latin-1")


def test_a_log_cannot_choose_the_rules_file_the_checker_runs(fixtures_dir, tmp_path):
    """Issue 14 item 4: 0.7.0's common.yaml enqueues '<division>_common.yaml', whose BEGIN code the checker execs."""
    marker = tmp_path / "marker"
    evil = tmp_path / "evil_common.yaml"
    evil.write_text(f"- BEGIN:\n    CODE: \"open({str(marker)!r}, 'w').write('ran')\"\n")
    division = "../" * 30 + str(tmp_path / "evil").lstrip("/")
    crafted = tmp_path / "result_0.txt"
    crafted.write_text(_fixture_text(fixtures_dir).replace('"value": "closed"', json.dumps({"value": division})[1:-1]),
                       encoding="latin-1")
    out = run_cli("harness.check", str(crafted), cwd=tmp_path)
    assert out.returncode == 1
    (line,) = [l for l in out.stdout.splitlines() if l.startswith("FAIL")]
    assert "submission_division is" in line and "not one of closed, open" in line
    assert not marker.exists()  # no code from the crafted path ran


def test_a_very_long_line_is_named_within_seconds(fixtures_dir, tmp_path):
    """Issue 14 item 5: mlperf_logging's prefix regex is quadratic; one valid 10 MB line ran past 300 s."""
    lines = _fixture_text(fixtures_dir).splitlines(keepends=True)
    huge = ':::MLLOG {"namespace": "", "time_ms": 1593019143723, "event_type": "POINT_IN_TIME", "key": "weights", ' \
           f'"value": "{"x" * 10_000_000}", "metadata": {{"file": "train.py", "lineno": 1}}}}\n'
    long_log = tmp_path / "result_0.txt"
    long_log.write_text("".join(lines[:30] + [huge] + lines[30:]), encoding="latin-1")
    started = time.monotonic()
    result = check_log(long_log, timeout=60)
    assert time.monotonic() - started < 30
    assert not result.passed and result.reason.startswith("line 31 is 10,000,1")


def test_each_log_s_check_time_is_bounded(fixtures_dir, tmp_path):
    result = check_log(fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt", timeout=0.001)
    assert not result.passed and result.reason == "the check took longer than 0.001 s: stopped"
    out = run_cli("harness.check", str(fixtures_dir / "nvidia_dgx1" / "gnmt"), "--timeout", "0", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr == "harness.check: error: --timeout 0 must be a finite number of seconds above 0\n"


def test_the_harness_sanity_findings_are_warnings_the_verdict_stays_the_official_one(fixtures_dir, tmp_path):
    """Issue 23: a run_stop 60 s before its run_start passes the official checker; the harness says so as a
    warning on a PASS line instead of failing a log the official tools accept."""
    text = _fixture_text(fixtures_dir)
    start = int(re.search(r'"time_ms": (\d+), "event_type": "INTERVAL_START", "key": "run_start"', text).group(1))
    stop = re.search(r'"time_ms": (\d+), "event_type": "INTERVAL_END", "key": "run_stop"', text).group(1)
    bad = tmp_path / "result_0.txt"
    bad.write_text(text.replace(f'"time_ms": {stop}, "event_type": "INTERVAL_END", "key": "run_stop"',
                                f'"time_ms": {start - 60_000}, "event_type": "INTERVAL_END", "key": "run_stop"'),
                   encoding="latin-1")
    result = check_log(bad)
    assert result.passed and result.status == "pass"
    assert any(m.startswith("harness sanity check: run_stop (line") and "60.000 s before run_start" in m
               for m in result.warnings)
    out = run_cli("harness.check", str(bad), cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("PASS") and "1 warning(s): harness sanity check" in out.stdout


def test_v06_logs_are_checked_with_0_6_0_and_v05_logs_are_listed_as_not_checked(trees_dir, tmp_path):
    v06 = trees_dir / "v0.6" / "NVIDIA" / "results" / "dgx1_ngc19.05_pytorch"
    v05 = trees_dir / "v0.5" / "v0.5.0" / "google"
    out = run_cli("harness.check", str(v06), str(v05), "--allow-skipped", cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    lines = out.stdout.splitlines()
    assert sum(l.startswith("PASS") and "(gnmt, 0.6.0)" in l for l in lines) == 10
    assert sum(l.startswith("SKIP") and "v0.5" in l for l in lines) == 10
    assert "20 log(s): 10 passed, 0 failed, 10 not checked (no official checker for them)" in lines
    assert lines[-1] == "  ruleset 0.6.0: 10 log(s), v0.6 in the path"


def test_the_checker_reads_each_rules_file_as_yaml_would_once_per_process():
    """harness.results.read.official parses a rules file once, not once per log: what the checker gets must be
    what yaml.load gives it, and a copy of its own."""
    from harness.results.read import official

    with official.fast_checker():  # what the checker's module sees while it checks a log
        for path in sorted((Path(mlp_compliance.__file__).parent / "training_4.1.0").glob("*.yaml")):
            with open(path) as f:
                fresh = yaml.load(f, Loader=yaml.BaseLoader)
            with open(path) as f:
                first = mlp_compliance.yaml.load(f, Loader=yaml.BaseLoader)
            first.append("changed by a reader")
            with open(path) as f:
                assert mlp_compliance.yaml.load(f, Loader=yaml.BaseLoader) == fresh, path
    assert mlp_compliance.yaml is yaml  # and after it, the module as it ships


def test_logs_no_official_checker_judged_fail_the_check_unless_allowed(trees_dir, tmp_path):
    """A SKIP (v0.5: no checker) or CRASH is nothing official vouching for the log: exit 1 with one line
    saying so and how to accept them."""
    v05 = trees_dir / "v0.5" / "v0.5.0" / "google"
    out = run_cli("harness.check", str(v05), cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.splitlines() == ["harness.check: error: 10 log(s) not judged by the official checker (CRASH or "
                                       "SKIP above); pass --allow-skipped to accept them"]
    assert "10 log(s): 0 passed, 0 failed, 10 not checked (no official checker for them)" in out.stdout
    assert run_cli("harness.check", str(v05), "--allow-skipped", cwd=tmp_path).returncode == 0
    out = run_cli("harness.check", str(v05), "--jobs", "0", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.splitlines()[-1].endswith("error: --jobs must be at least 1")
    assert list(tmp_path.iterdir()) == []


def test_a_run_still_in_progress_is_listed_as_such_and_leaves_the_exit_status_to_the_others(tmp_path, capsys):
    """A harness run's log before its run_stop, while its heartbeat beats: RUN, neither a pass nor a failure;
    once the heartbeat is a minute old (a killed run) the checker judges it: FAIL."""
    import os

    from harness.check.__main__ import main
    from tests.results.analysis.test_speedups import write_run

    run = tmp_path / "run"
    write_run(run / "mlperf.log", 1, 1, 3, 1000.0)
    log = run / "mlperf.log"
    log.write_text("".join(l + "\n" for l in log.read_text().splitlines() if '"run_stop"' not in l))
    (run / ".heartbeat").mkdir()
    beat = run / ".heartbeat" / "rank_0.json"
    beat.write_text('{"rank": 0}')
    assert main([str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"RUN   {log}  (gnmt, no ruleset): in progress: no run_stop yet and its heartbeat ")
    assert out[0].endswith(" s ago; check it when the run ends")
    assert out[1] == "1 log(s): 0 passed, 0 failed, 1 in progress (not finished yet: not checked)"
    old = time.time() - 120
    os.utime(beat, (old, old))
    assert main([str(run)]) == 1 and capsys.readouterr().out.startswith("FAIL")


def test_a_timeout_that_is_not_a_finite_positive_number_is_one_line(capsys):
    from harness.check.__main__ import main

    for given in ("nan", "inf", "-3"):
        assert main(["nowhere", "--timeout", given]) == 2
        assert capsys.readouterr().err == f"harness.check: error: --timeout {float(given):g} must be a finite number " \
                                          "of seconds above 0\n"


def test_a_log_line_nested_too_deep_is_one_failed_line_and_the_other_logs_are_checked(tmp_path):
    from tests.results.read.test_formats import DEEP
    from tests.results.read.test_runfiles import harness_run

    for seed in (1, 2, 3):
        harness_run(tmp_path / f"s{seed}", seed)
    with open(tmp_path / "s3" / "mlperf.log", "a") as log:
        log.write(f':::MLLOG {{"namespace": "", "time_ms": 1, "key": "x", "value": {DEEP}, "metadata": {{}}}}\n')
    out = run_cli("harness.check", str(tmp_path), "--verbose", cwd=tmp_path)  # every message of each log
    assert "Traceback" not in out.stdout + out.stderr and out.returncode == 1
    assert "3 log(s): 0 passed, 3 failed" in out.stdout  # each judged (the logs lack the submission keys)
    assert out.stdout.count("nested too deep to read") == 1
    assert out.stdout.index("nested too deep to read") > out.stdout.index("s3/mlperf.log")


def test_a_pipe_named_result_json_is_not_read_and_the_log_is_checked(tmp_path):
    from tests.results.read.test_runfiles import harness_run

    run = harness_run(tmp_path / "run", 1)
    (run / "result.json").unlink()
    os.mkfifo(run / "result.json")  # opened for reading, it waits for a writer for ever
    out = run_cli("harness.check", str(run), cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stdout + out.stderr and "1 log(s): 0 passed, 1 failed" in out.stdout
