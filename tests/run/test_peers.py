"""A dead peer is named from the heartbeat it left behind: its process gone on this host, its file
no longer rewritten on another; a rank that ended and tidied up, or that lives, is not named."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

from harness.observe.heartbeat import beat_path
from harness.run import peers


def _beat(run_dir, rank, pid, host=None, phase="train", progress=3):
    path = beat_path(run_dir, rank)
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")  # as the heartbeat writes it: never half a file
    tmp.write_text(json.dumps({"rank": rank, "pid": pid, "host": host or socket.gethostname(),
                               "time": time.time(), "phase": phase, "progress": progress}))
    tmp.replace(path)


def test_a_killed_rank_on_this_host_is_named_and_its_heartbeat_removed(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _beat(tmp_path, 0, 1)  # this rank: never judged
    _beat(tmp_path, 1, gone.pid)
    seen = RuntimeError("[gloo/transport/tcp/pair.cc:545] Read error: Connection reset by peer. "
                        "This is typically caused by a remote worker hanging\nmore")
    rank, why = peers.dead_peer(tmp_path, 2, 0, seen)
    assert rank == 1
    assert why == (f"its process {gone.pid} ended without a word (killed: SIGKILL, out of memory, or a crash), "
                   "last seen in phase train; rank 0 saw: [gloo/transport/tcp/pair.cc:545] Read error: "
                   "Connection reset by peer")
    assert not beat_path(tmp_path, 1).exists()


def test_living_and_tidied_ranks_are_not_named(tmp_path):
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _beat(tmp_path, 1, alive.pid)  # rank 2 has no file: it ended and removed it
        start = time.monotonic()
        assert peers.find_dead(tmp_path, range(3), 0) is None
        assert time.monotonic() - start < 1  # all on this host: nothing to wait for
    finally:
        alive.kill()
        alive.wait()


def test_a_rank_on_another_host_is_judged_by_its_heartbeat_moving(tmp_path):
    _beat(tmp_path, 1, 4242, host="node-b", progress=7)
    _beat(tmp_path, 2, 4343, host="node-c", progress=1)
    stop = threading.Event()

    def rank2_lives():
        n = 1
        while not stop.wait(0.3):
            n += 1
            _beat(tmp_path, 2, 4343, host="node-c", progress=n)

    t = threading.Thread(target=rank2_lives)
    t.start()
    try:
        rank, why = peers.find_dead(tmp_path, range(3), 0, settle_s=1.5)
    finally:
        stop.set()
        t.join()
    assert rank == 1 and why == "its heartbeat on node-b (process 4242) stopped, last seen in phase train"


def test_a_killed_rank_still_exiting_when_its_socket_broke_is_named(tmp_path, monkeypatch):
    """The kernel closes a SIGKILLed process's sockets before it becomes a zombie: the peer that sees
    the reset can find it still running for a moment, and must look again before calling it alive."""
    _beat(tmp_path, 1, 4242)
    looks = iter([None, None, "its process 4242 ended without a word"])
    monkeypatch.setattr(peers, "_local_death", lambda beat: next(looks))
    assert peers.find_dead(tmp_path, range(2), 0) == (1, "its process 4242 ended without a word")
