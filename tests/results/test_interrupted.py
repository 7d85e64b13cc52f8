"""Issue 26: runs stopped by Ctrl-C or SIGTERM are not runs that did not converge. MLPerf scores completed runs
only: the report lists them apart, in no group (so one stopped before it logged its batch makes no "batch n/a"
group) and in no score, and `harness.check` says what they are without failing."""
from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli
from tests.results.roundlogs import mllog

T0 = 1_600_000_000_000


def _run(run_dir, seed, qualities=(), *, status="success", reason=None, started=True, result_reason=None):
    """A harness run directory as harness.train leaves it (harness/run/session.py: run_stop aborted with the
    signal as its reason, before_run_start where the timed region never began)."""
    lines = [mllog("submission_benchmark", "toy", T0), mllog("submission_platform", "1xCPU", T0),
             mllog("seed", seed, T0), mllog("init_start", None, T0, "INTERVAL_START")]
    if started:
        lines += [mllog("global_batch_size", 64, T0), mllog("init_stop", None, T0 + 100, "INTERVAL_END"),
                  mllog("run_start", None, T0 + 100, "INTERVAL_START")]
    now = T0 + 100
    for epoch, quality in enumerate(qualities, start=1):
        now += 1000 + 10 * seed
        lines.append(mllog("eval_accuracy", quality, now, epoch_num=epoch))
    meta = {"status": status} | ({"reason": reason} if reason else {}) | ({} if started else {"before_run_start": True})
    lines.append(mllog("run_stop", None, now + 1, "INTERVAL_END", **meta))
    run_dir.mkdir(parents=True)
    (run_dir / "mlperf.log").write_text("".join(lines))
    (run_dir / "result.json").write_text(json.dumps({
        "status": status, "reason": result_reason, "target": 0.9, "quality_metric": "acc",
        "quality_direction": "higher", "epoch_unit": "epochs"}))


def _sweep(tmp_path):
    for seed in (1, 2, 3):
        _run(tmp_path / f"s{seed}", seed, (0.5, 0.95))
    _run(tmp_path / "missed", 4, (0.5, 0.6), status="aborted")  # the epoch cap: a run that did not converge
    _run(tmp_path / "term", 5, (0.5,), status="aborted", reason="SIGTERM", result_reason="interrupted (SIGTERM)")
    _run(tmp_path / "early", 6, status="aborted", reason="SIGINT", started=False,
         result_reason="interrupted (SIGINT) before run_start: no time to train")
    early_data = tmp_path / "datagen"  # stopped while its dataset was generated: no mlperf.log at all
    early_data.mkdir()
    (early_data / "result.json").write_text(json.dumps({
        "status": "aborted", "benchmark": "toy", "seed": 7, "reason": "interrupted (SIGINT) before run_start"}))
    return tmp_path


def test_interrupted_runs_are_listed_apart_and_out_of_every_group_and_score(tmp_path):
    root = _sweep(tmp_path)
    out = run_cli("harness.report", str(root), "--json", "-")
    assert out.returncode == 0, out.stderr  # a stopped run is not a problem of the report's input
    report = json.loads(out.stdout)
    stopped = {r["path"].split("/")[-2]: r["interrupted"] for r in report["runs"] if r["interrupted"]}
    assert stopped == {"term": "SIGTERM", "early": "SIGINT", "datagen": "SIGINT"}
    (group,) = report["groups"]  # no group of its own for the run that never logged its batch
    assert group["global_batch_size"] == 64 and group["runs"] == 4 and group["converged"] == 3
    score = group["score"]
    assert score["minutes"] is not None and "1 did not converge: counted as the slowest" in score["note"]

    text = run_cli("harness.report", str(root)).stdout
    section = text.split("Interrupted runs (stopped by a signal: not completed, so not scored)")[1]
    assert "term/mlperf.log: toy, stopped by SIGTERM" in section
    assert "early/mlperf.log: toy, stopped by SIGINT before run_start" in section
    runs_table = text.split("Interrupted runs")[0]
    assert "term/mlperf.log" not in runs_table and "s1/mlperf.log" in runs_table
    assert "7 run(s) read: 3 scored, 1 did not converge, 0 could not be scored, 3 interrupted" in text
    assert "interrupted by SIGINT, 2 run(s): listed apart, in no group and no score" in text


def test_check_lists_interrupted_logs_as_stopped_and_does_not_fail_on_them(tmp_path):
    root = _sweep(tmp_path)
    out = run_cli("harness.check", str(root / "term"), str(root / "early"))
    assert out.returncode == 0, out.stdout
    lines = out.stdout.splitlines()
    assert [l.split()[0] for l in lines[:2]] == ["STOP", "STOP"]
    assert "stopped by SIGTERM: not a completed run (MLPerf checks and scores completed runs only)" in out.stdout
    assert lines[2] == "2 log(s): 0 passed, 0 failed, 2 interrupted (not completed runs: not checked)"
    assert all(len(l) < 240 for l in lines)


def test_a_log_cut_off_by_the_signal_is_still_an_interrupted_run(tmp_path):
    """The second signal of a Ctrl-C can cut the log before its run_stop; result.json still names the first."""
    _run(tmp_path / "cut", 1, (0.5,), status="aborted", reason="SIGINT", result_reason="interrupted (SIGINT)")
    log = tmp_path / "cut" / "mlperf.log"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))  # no run_stop
    report = json.loads(run_cli("harness.report", str(tmp_path), "--json", "-").stdout)
    (run,) = report["runs"]
    assert run["interrupted"] == "SIGINT" and run["problems"] == [] and report["groups"] == []
    check = run_cli("harness.check", str(tmp_path))
    assert check.returncode == 0 and check.stdout.startswith("STOP")


def test_the_json_says_what_became_of_every_run(tmp_path):
    report = json.loads(run_cli("harness.report", str(_sweep(tmp_path)), "--json", "-").stdout)
    outcome = report["outcome"]
    assert (outcome["runs"], outcome["scored"], outcome["not_converged"], outcome["interrupted"]) == (7, 3, 1, 3)
    assert outcome["signals"] == {"SIGTERM": 1, "SIGINT": 2}


@pytest.mark.e2e
def test_a_run_killed_before_its_log_began_is_an_incomplete_run_in_check_and_report(tmp_path):
    """SIGKILL (as the OOM killer sends it) while the run starts: no mlperf.log, no result.json; the sweep's other
    runs are still read, and the killed one is named, not silently left out of the count."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import REPO, child_env

    _run(tmp_path / "out" / "done", 1, (0.5, 0.95))
    proc = subprocess.Popen([sys.executable, "-m", "harness.train", "model=ncf", f"output_root={tmp_path / 'out'}",
                             f"data_root={tmp_path / 'data'}"], cwd=REPO, env=child_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while not list((tmp_path / "out").rglob(".hydra/config.yaml")):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            time.sleep(0.005)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (killed,) = [p.parent.parent for p in (tmp_path / "out").rglob(".hydra/config.yaml")]
    assert not (killed / "mlperf.log").exists() and not (killed / "result.json").exists()
    for command in ("harness.check", "harness.report"):
        out = run_cli(command, str(tmp_path / "out"))
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert f"{killed}: a run folder with neither mlperf.log nor result.json: the run was killed" in out.stderr
        assert "done/mlperf.log" in out.stdout or "1 log(s)" in out.stdout or "toy" in out.stdout
