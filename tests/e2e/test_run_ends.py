"""How a run ends when it does not end by itself: SIGTERM (what `timeout`, SLURM and `docker stop`
send) like Ctrl-C, Ctrl-C before the timed region, a rank stopped or failing. Each leaves a
result.json that names what happened, one line on the console, and nothing outside its root."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import child_env, said, strict_json, wait_for_text

pytestmark = pytest.mark.e2e
TPUT2 = ["model=tputonly", "mode=throughput", "device=cpu", "gpus=2", "warmup_steps=0", "throughput_steps=1000000",
         "throughput_repeats=1", "progress=false", "output_root=out"]


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test():
    """A test that fails before its run ends kills the run's process group and closes its pipes here, so
    that the next test on this worker is not failed by the leftovers' ResourceWarnings."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.communicate()


def _start(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    full = child_env(HARNESS_MODELS="tests.models.tputonly", **(env or {}))
    proc = subprocess.Popen([sys.executable, "-m", "harness.train", *args], cwd=cwd, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _STARTED.append(proc)
    return proc


def _result(root: Path) -> dict:
    (path,) = root.rglob("result.json")
    return json.loads(path.read_text())


def _last_mllog(log: Path) -> dict:
    return json.loads(log.read_text().splitlines()[-1][len(":::MLLOG "):])


def _rank_pid(root: Path, rank: int) -> int:
    beat = wait_for_text(root, f"rank_{rank}.json", '"phase": "train"')
    return json.loads(beat.read_text())["pid"]


def test_sigterm_to_a_single_rank_run_ends_it_as_ctrl_c_does(tmp_path):
    proc = _start(tmp_path, "model=ncf", "seed=1", "model.target=0.99", "progress=false", "output_root=out")
    log = wait_for_text(tmp_path / "out", "mlperf.log", '"key": "run_start"')
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "harness.train: stopped by SIGTERM; the run is marked aborted in its result.json" in err
    result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and result["reason"] == "interrupted (SIGTERM)"
    last = _last_mllog(log)
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"] == "SIGTERM" and "before_run_start" not in last["metadata"]


def test_a_throughput_run_stopped_before_its_windows_end_says_so_instead_of_empty_fields(tmp_path):
    """An interrupted measurement has no figure, platform or batch to show: the console line said
    "n/a (1 warm-up steps left out), , amp, global batch None"."""
    proc = _start(tmp_path, *[a for a in TPUT2 if a != "gpus=2"])
    _rank_pid(tmp_path / "out", 0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    (line,) = [x for x in out.splitlines() if x.startswith("THROUGHPUT:")]
    assert line == "THROUGHPUT: n/a (aborted: interrupted (SIGTERM)); fp32", line
    result = _result(tmp_path / "out")
    assert result["throughput"] is None
    # what rank 0 learned while initialising stays in the record: the report groups the run with its siblings
    assert (result["platform"], result["accelerator"], result["device"]) == ("1xCPU", "CPU", "cpu")
    assert result["global_batch_size"] == result["hyperparameters"]["global_batch_size"] > 0
    assert not list((tmp_path / "out").rglob(".initialised.json"))


# each signal, each moment and each rank count once: the handling is the same for either signal, and the six
# combinations took 35 s of the suite
GROUP_STOPS = [pytest.param(sig, delay, ranks, id=f"{sig.name}-{when}-{ranks}rank")
               for sig, delay, when, ranks in ((signal.SIGTERM, 0.0, "as-workers-start", 1),
                                               (signal.SIGINT, 0.1, "mid-epoch", 1),
                                               (signal.SIGTERM, 0.3, "mid-epoch", 2))]


@pytest.mark.parametrize("sig,delay,ranks", GROUP_STOPS)
def test_a_signal_to_the_whole_group_with_loader_workers_ends_the_run_at_once_with_one_line(tmp_path, sig, delay,
                                                                                            ranks):
    """`timeout`, SLURM and a terminal's Ctrl-C signal every process of the group: the DataLoader workers get
    it too. They leave it to the training process, which stops them as the run ends: the run ends stopped
    by the signal (143 or 130) with its one line and nothing after it, within seconds. Before, the worker
    killed first was reported as a crash ("DataLoader worker ... is killed by signal", exit 1); queues
    finalized by the collector at exit printed "Bad file descriptor" tracebacks after the line; and the
    workers, waiting on those queues, held the exit 10-30 s."""
    proc = _start(tmp_path, "model=resnet", "+debug=resnet", "seed=1", "model.workers=2", "model.max_epochs=20",
                  "model.target=0.99", "progress=false", "output_root=out", f"gpus={ranks}", "device=cpu")
    log = wait_for_text(tmp_path / "out", "mlperf.log", '"key": "epoch_start"')
    time.sleep(delay)
    os.killpg(proc.pid, sig)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 128 + sig, err
    word = "stopped by SIGTERM" if sig == signal.SIGTERM else "interrupted"
    *before, last_line = err.strip().splitlines()
    assert last_line == f"harness.train: {word}; the run is marked aborted in its result.json", err
    assert all(line.startswith("warning: ") for line in before), err  # a busy machine's, before the run
    assert took < 8, f"the run took {took:.1f} s to end after {sig.name}"
    result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and result["reason"] == f"interrupted ({sig.name})"
    # rebuilt from the log: every hyperparameter it logged, not global_batch_size alone
    assert {"global_batch_size", "opt_name"} <= set(result["hyperparameters"]) and len(result["hyperparameters"]) > 4
    last = _last_mllog(log)
    assert last["key"] == "run_stop" and last["metadata"]["reason"] == sig.name


def test_ctrl_c_during_initialisation_still_ends_the_log_with_run_stop(tmp_path):
    """MLPerf's run_stop closes a run_start: before run_start there is no time to train, and the
    closing run_stop says so (docs/results.md)."""
    proc = _start(tmp_path, "model=ncf", "seed=1", "progress=false", "output_root=out")
    log = wait_for_text(tmp_path / "out", "mlperf.log", '"key": "init_start"')
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert '"key": "run_start"' not in log.read_text()
    last = _last_mllog(log)
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"] == "SIGINT" and last["metadata"]["before_run_start"] is True
    result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and result["time_to_train_s"] is None
    assert result["reason"] == "interrupted (SIGINT) before run_start: no time to train"


def test_sigterm_to_one_rank_of_two_is_named(tmp_path):
    proc = _start(tmp_path, *TPUT2)
    os.kill(_rank_pid(tmp_path / "out", 1), signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM to rank 1" in err and "To enable traceback" not in out + err
    result = _result(tmp_path / "out")
    assert result["reason"] == "interrupted (SIGTERM to rank 1)"
    assert (result["platform"], result["world_size"]) == ("2xCPU", 2) and result["global_batch_size"] > 0


def test_sigterm_to_the_launcher_is_called_sigterm(tmp_path):
    proc = _start(tmp_path, *TPUT2)
    _rank_pid(tmp_path / "out", 1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert _result(tmp_path / "out")["reason"] == "interrupted (SIGTERM)"


def test_a_stopped_rank_ends_the_run_within_its_limit_naming_the_rank(tmp_path):
    proc = _start(tmp_path, *TPUT2, "progress_timeout_s=5")
    pid = _rank_pid(tmp_path / "out", 1)
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.time()
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)  # gone already, unless the watchdog failed
        except ProcessLookupError:
            pass
    assert time.time() - stopped_at < 5 + 30
    assert proc.returncode == 1, err
    result = _result(tmp_path / "out")
    assert result["status"] == "failed" and result["error"]["rank"] == 1
    assert result["reason"].startswith("rank 1 made no progress for 5 s")
    assert "error: rank 1 made no progress for 5 s" in err
    assert not list((tmp_path / "out").rglob(".heartbeat"))


def test_a_single_rank_run_stuck_in_a_step_ends_within_its_limit_with_one_line(tmp_path):
    """One rank, watched from a thread of its own process: a step that never returns (here a sleep; a
    read of a FIFO waits the same way) ends the run as a stalled rank of several does."""
    args = [a.replace("gpus=2", "gpus=1") for a in TPUT2] + ["model.sleep_s=600", "progress_timeout_s=3"]
    started = time.time()
    proc = _start(tmp_path, *args)
    _, err = proc.communicate(timeout=120)
    assert time.time() - started < 60
    assert proc.returncode == 1, err
    errors = said(err)
    assert len(errors) == 1 and errors[0].startswith("error: rank 0 made no progress for 3 s (process "), err
    result = _result(tmp_path / "out")
    assert result["status"] == "failed" and result["reason"] == errors[0][len("error: "):]
    assert not list((tmp_path / "out").rglob(".heartbeat"))


def test_a_failing_rank_is_one_line_and_leaves_nothing_outside_the_output_root(tmp_path):
    """The console gets the cause, not the launcher's tracebacks (they are in train.log), and the
    spawned ranks' temporary error files stay in the run directory."""
    (tmp_path / "tmp").mkdir()
    # device=auto where no GPU is: the CPU fallback's line is checked too (a GPU host runs the CPU ranks as
    # asked: with one GPU, gpus=2 device=auto is refused before any rank starts)
    auto = not torch.cuda.is_available()
    args = [a.replace("device=cpu", "device=auto") if auto else a for a in TPUT2] + ["model.crash_on_rank=1"]
    proc = _start(tmp_path, *args, env={"TMPDIR": str(tmp_path / "tmp")})
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err
    assert said(err) == ["error: rank 1 failed: RuntimeError: crash_on_rank=1: this rank fails on purpose"]
    assert "Traceback" not in out
    # no pytorch-errorfile-*.pickle left there; torch's own compile cache (torchinductor_<user>, made when
    # an optimizer first imports torch._dynamo, if rank 0 gets that far) is shared by every run by design
    left = [p.name for p in (tmp_path / "tmp").iterdir() if not p.name.startswith("torchinductor_")]
    assert left == []
    (train_log,) = (tmp_path / "out").rglob("train.log")
    assert "Traceback" in train_log.read_text() and "fails on purpose" in train_log.read_text()
    if auto:
        assert "no GPU on this host: gpus=2 runs 2 CPU ranks (device=cpu, gloo)" in out


def test_a_nan_on_one_rank_of_two_ends_the_run_as_failed_within_one_check_interval(tmp_path):
    from harness.observe.finite import CHECK_EVERY

    nan_at = CHECK_EVERY + CHECK_EVERY // 2
    proc = _start(tmp_path, *TPUT2, f"model.nan_at_step={nan_at}", "model.nan_on_rank=1")
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err
    (path,) = (tmp_path / "out").rglob("result.json")
    result = strict_json(path)
    stopped_at = 2 * CHECK_EVERY  # the first check after the NaN
    reason = (f"the loss is nan at step {nan_at} (epoch 1) on rank 1; the run stopped at step {stopped_at} "
              f"(checked every {CHECK_EVERY} steps): lower the learning rate or check the data")
    assert result["status"] == "failed" and result["reason"] == reason
    assert result["error"]["type"] == "NonFiniteLoss" and result["error"]["rank"] == 1
    assert result["throughput"] is None  # a measurement that diverged measures nothing
    assert said(err) == [f"error: {reason}"]


def test_a_nan_loss_term_is_named_in_the_log_and_the_result_and_nothing_is_bare_nan(tmp_path):
    out = subprocess.run([sys.executable, "-m", "harness.train", "model=twopart", "seed=1", "output_root=out",
                          "progress=false", "model.nan_at_step=60", "model.target={A: 0.999, B: 0.999}"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=240, env=child_env(HARNESS_MODELS="tests.models.twopart"))
    assert out.returncode == 1, out.stderr
    (path,) = (tmp_path / "out").rglob("result.json")
    result = strict_json(path)
    assert result["status"] == "failed" and result["reason"].startswith(
        "loss term B is nan at step 60 (epoch 2) on rank 0; the run stopped at step 92")  # 46 steps an epoch
    assert result["epochs"] and all(e["loss_terms"].keys() == {"A", "B"} for e in result["epochs"])  # the epoch before
    last = _last_mllog(path.parent / "mlperf.log")
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"] == result["reason"]
    for line in (path.parent / "mlperf.log").read_text().splitlines():
        json.loads(line[len(":::MLLOG "):], parse_constant=lambda c: pytest.fail(f"mlperf.log holds {c}"))


FSIZE = 6000  # the fallback's file-size limit, in bytes
# a tenth of the embedded default's users: generated, read and trained on in a fraction of its time
SMALL_RATINGS = ["dataset.generator.users=400", "dataset.generator.items=2500", "dataset.generator.mean_ratings=40"]


def _small_disk(path: Path) -> bool:
    """A 4 MiB tmpfs at path (needs root and mount); False where this machine cannot make one."""
    path.mkdir()
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_a_disk_that_fills_mid_run_ends_it_at_once_and_keeps_every_file_whole(tmp_path):
    """A real full disk (a 4 MiB tmpfs, filled once the run trains) where this machine can mount one;
    else a file-size limit (RLIMIT_FSIZE) put on the run once it trains, the same failure to the harness.
    Either comes at run_start, so the run itself generates the dataset first, on a disk with room."""
    data = tmp_path / "data"
    small = tmp_path / "small"
    mounted = _small_disk(small)
    args = ["model=ncf", "seed=1", "model.target=0.99", "max_epochs=50", "progress=false", "telemetry_interval_s=0.1",
            "output_root=small", f"data_root={data}", *SMALL_RATINGS]

    def no_sigxfsz() -> None:  # the fallback's write past the limit: EFBIG instead of SIGXFSZ
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    try:
        proc = subprocess.Popen([sys.executable, "-m", "harness.train", *args], cwd=tmp_path, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(),
                                preexec_fn=None if mounted else no_sigxfsz)
        log = wait_for_text(small, "mlperf.log", '"key": "run_start"')
        filled_at = time.time()
        if mounted:
            # unbuffered: a buffered file's close() flushes its last bytes again, and that raises ENOSPC
            with open(small / "filler", "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                except OSError:
                    pass
        else:
            # each file at most FSIZE bytes from now on: mlperf.log (about 4.5 kB at run_start) runs into it within
            # its first epoch, telemetry.jsonl (0.1 kB each tenth of a second) sooner where the start was slow, and
            # result.json (3 to 3.5 kB) still fits. Set at run_start, not at exec: there a slow start could fill
            # telemetry.jsonl before run_start, and the dataset, far larger, could not be generated
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (FSIZE, FSIZE))
        _, err = proc.communicate(timeout=240)
        ended_after = time.time() - filled_at
        run_dir = log.parent
        result = strict_json(run_dir / "result.json")
        lines = log.read_text().splitlines(keepends=True)
        records = [json.loads(line[len(":::MLLOG "):]) for line in lines]  # every record whole
        left = sorted(p.name for p in run_dir.iterdir() if p.name.startswith("."))
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(small)], check=False)
    assert proc.returncode == 1, err
    why = "the disk is full (No space left on device)" if mounted else "a file-size limit (ulimit -f) stops it"
    assert result["status"] == "failed" and result["error"]["type"] == "DiskFull" and why in result["reason"]
    assert said(err) == [f"error: {result['reason']}"]  # one line, no logging tracebacks
    assert result["epochs_run"] < 50 and ended_after < 60  # it did not train on to the epoch cap
    assert all(line.endswith("\n") for line in lines)
    assert records[-1]["key"] == "run_stop" or mounted is False  # with room reserved for it, the log is closed
    assert left == [".hydra"]  # no half-written .result-*.json, no reserve left behind


def test_a_stalled_rank_0_s_mlperf_log_ends_with_the_watchdog_s_verdict_not_a_signal(tmp_path):
    """The watchdog stops a stalled rank with SIGTERM; rank 0's log must not read as a user's stop (which the
    report and the checker set apart as 'stopped by SIGTERM'), and the console gets the verdict once."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.train", "model=ncf", "+debug=ncf", "device=cpu", "gpus=2",
                             "seed=1", "model.target=0.99", "max_epochs=50", "model.max_epochs=50",
                             "progress_timeout_s=5", "progress=false", "output_root=out", "data_root=data"],
                            cwd=tmp_path, env=child_env(OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    pid = _rank_pid(tmp_path / "out", 0)
    os.kill(pid, signal.SIGSTOP)
    try:
        _, err = proc.communicate(timeout=180)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 1, err
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    stop = _last_mllog(log)
    assert stop["key"] == "run_stop" and stop["metadata"]["reason"].startswith("rank 0 made no progress for 5 s"), stop
    assert [line for line in said(err) if "made no progress" in line] == \
        [f"error: {_result(tmp_path / 'out')['reason']}"], err
    assert not list((tmp_path / "out").rglob(".heartbeat"))


def test_a_killed_launcher_s_ranks_end_their_log_naming_its_death_not_ctrl_c(tmp_path):
    """torch's spawn sends each rank SIGINT when its launcher dies (the out-of-memory killer, a SIGKILL): the log
    said SIGINT, which the report reads as a user's Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.train", "model=ncf", "+debug=ncf", "device=cpu", "gpus=2",
                             "seed=1", "model.target=0.99", "max_epochs=50", "model.max_epochs=50", "progress=false",
                             "output_root=out", "data_root=data"],
                            cwd=tmp_path, env=child_env(OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _rank_pid(tmp_path / "out", 0)
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)  # returns once the ranks, which hold its pipes, have ended
        try:
            log = wait_for_text(tmp_path / "out", "mlperf.log", '"key": "run_stop"', timeout=60)
        except AssertionError as missing:  # seen once under CI's load: what the ranks said, to find out why
            logs = "\n".join(f"== {p.relative_to(tmp_path)}\n{p.read_text(errors='replace')[-2000:]}"
                              for p in sorted((tmp_path / "out").rglob("*.log")))
            raise AssertionError(f"{missing}\n== the ranks' stderr\n{err[-3000:]}\n{logs}") from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)  # the line is written whole before its key shows (one write); let the rank close the file
    reason = _last_mllog(log)["metadata"]["reason"]
    assert reason == f"the launcher (process {proc.pid}) ended before this rank (SIGINT on its death)", reason
