"""The watchdog: a silent rank, or a training rank whose steps stand still, ends the run with its
rank named; a slow evaluation does not."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness.observe.heartbeat import Heartbeat, beat_path
from harness.run.watchdog import Watchdog


def _beat(run_dir: Path, rank: int, phase: str, progress: int, t: float, pid: int = 0, **extra: float) -> None:
    path = beat_path(run_dir, rank)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"rank": rank, "pid": pid, "host": "elsewhere", "time": t, "phase": phase,
                                "progress": progress, **extra}))


def test_a_rank_whose_heartbeat_stops_is_named(tmp_path):
    dog = Watchdog(tmp_path, [0, 1], limit_s=5)
    for second in range(8):
        _beat(tmp_path, 0, "train", 11, second)  # rank 0 waits for rank 1 in a collective: alive, no step
        if second < 2:
            _beat(tmp_path, 1, "train", 11, second)  # rank 1 falls silent after 1 s
        verdict = dog.check(float(second))
        assert verdict is None or second >= 5
    assert verdict == (1, "rank 1 made no progress for 5 s")  # not rank 0, which waits for it


def test_training_without_steps_stalls_but_a_long_evaluation_does_not(tmp_path):
    dog = Watchdog(tmp_path, [0, 1], limit_s=5)
    for second in range(30):  # both alive; both evaluating for 30 s: safe at any limit
        _beat(tmp_path, 0, "eval", 7, second)
        _beat(tmp_path, 1, "eval", 7, second)
        assert dog.check(float(second)) is None
    for second in range(30, 40):  # back to training, and no step is taken by either
        _beat(tmp_path, 0, "train", 7, second)
        _beat(tmp_path, 1, "train", 7, second)
        dog.check(float(second))
    assert dog.verdict == (0, "ranks 0, 1 made no progress for 5 s")


def test_a_compile_longer_than_the_limit_stalls_no_rank_but_steps_standing_still_after_it_do(tmp_path):
    """Rank 0 autotunes its kernels (max-autotune: minutes) while rank 1, compiled sooner, waits for it in a
    collective: neither is hung. Once the compile ends, steps standing still are judged again."""
    dog = Watchdog(tmp_path, [0, 1], limit_s=5)
    for second in range(20):
        _beat(tmp_path, 0, "compile", 0, second)
        _beat(tmp_path, 1, "train", 0, second)
        assert dog.check(float(second)) is None
    for second in range(20, 30):
        _beat(tmp_path, 0, "train", 0, second)
        _beat(tmp_path, 1, "train", 0, second)
        dog.check(float(second))
    assert dog.verdict == (0, "ranks 0, 1 made no progress for 5 s")


def test_a_compile_that_never_ends_stalls_after_four_limits(tmp_path):
    dog = Watchdog(tmp_path, [0], limit_s=5)
    for second in range(25):
        _beat(tmp_path, 0, "compile", 3, second)  # alive, compiling, for ever (a wedged compile worker pool)
        verdict = dog.check(float(second))
        assert verdict is None or second >= 20
    assert dog.verdict == (0, "rank 0 made no progress for 5 s (compiling for 20 s, the most a compile may take: "
                              "4 x the limit)")


def test_a_rank_silent_while_compiling_still_stalls(tmp_path):
    dog = Watchdog(tmp_path, [0], limit_s=5)
    _beat(tmp_path, 0, "compile", 3, 0)  # written once, then never again: the process is wedged
    for second in range(8):
        dog.check(float(second))
    assert dog.verdict == (0, "rank 0 made no progress for 5 s")


def test_an_evaluation_waiting_for_its_loader_workers_past_the_limit_stalls(tmp_path):
    """Alive, evaluating, and waiting for one batch from loader workers that never send it (stopped, or stuck
    in a read): no step count moves in an evaluation, so the wait itself is judged."""
    dog = Watchdog(tmp_path, [0], limit_s=5)
    for second in range(8):
        _beat(tmp_path, 0, "eval", 7, second, waiting_s=second + 0.5)
        verdict = dog.check(float(second))
        assert verdict is None or second >= 5
    assert dog.verdict == (0, "rank 0 made no progress for 5 s")


def test_the_rank_that_got_least_far_is_the_one_named(tmp_path):
    dog = Watchdog(tmp_path, [0, 1, 2], limit_s=3)
    for second in range(6):  # ranks 0 and 2 wait in a collective for rank 1, which stopped earlier
        for rank, steps in ((0, 41), (1, 40), (2, 41)):
            _beat(tmp_path, rank, "train", steps, second)
        dog.check(float(second))
    assert dog.verdict == (1, "rank 1 made no progress for 3 s")


def test_a_stopped_process_is_resumed_and_terminated(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.time() + 30
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.time() < deadline, "the process never stopped"
            time.sleep(0.05)
        path = beat_path(tmp_path, 1)
        path.parent.mkdir()
        path.write_text(json.dumps({"rank": 1, "pid": proc.pid, "host": socket.gethostname(), "time": 0,
                                    "phase": "train", "progress": 3}))
        dog = Watchdog(tmp_path, [1], limit_s=2, grace_s=30)
        dog.check(0.0)
        rank, message = dog.check(2.0)
        assert rank == 1 and message.startswith("rank 1 made no progress for 2 s (process ")
        assert "is stopped (SIGSTOP?), last phase train)" in message
        assert proc.wait(timeout=20) == -signal.SIGTERM  # resumed, then terminated: no SIGKILL needed
    finally:
        proc.kill()
        proc.wait()


def test_a_heartbeat_file_says_how_far_the_rank_got_and_goes_when_it_ends(tmp_path):
    beat = Heartbeat(tmp_path, rank=3, interval_s=0.1).start()
    beat.phase, beat.progress = "train", 12
    time.sleep(0.5)
    seen = json.loads(beat_path(tmp_path, 3).read_text())
    assert (seen["rank"], seen["pid"], seen["phase"], seen["progress"]) == (3, os.getpid(), "train", 12)
    beat.stop()
    assert not (tmp_path / ".heartbeat").exists()


def test_the_heartbeat_says_compile_while_torch_compiles_in_the_loop(tmp_path):
    """What the watchdog reads during a compile inside the training loop: phase "compile", then "train" again."""
    import torch

    from harness.observe import heartbeat

    seen_during: list[str] = []

    def slow_backend(graph, example_inputs):  # stands for Inductor autotuning: the beat is written meanwhile
        time.sleep(1.3)
        seen_during.append(json.loads(beat_path(tmp_path, 0).read_text())["phase"])
        return graph.forward

    heartbeat.start(tmp_path, 0)
    try:
        heartbeat.HeartbeatHook().before_run()
        double = torch.compile(lambda x: x * 2, backend=slow_backend)  # compiled in the loop, as a lazy kernel is
        assert float(double(torch.ones(1))) == 2.0
        time.sleep(1.2)
        after = json.loads(beat_path(tmp_path, 0).read_text())["phase"]
    finally:
        heartbeat.stop()
        torch._dynamo.reset()
    assert seen_during == ["compile"]
    assert after == "train"
