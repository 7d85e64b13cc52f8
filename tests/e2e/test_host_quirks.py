"""Runs on hosts unlike the development machine, each made for real in a namespace of its own (root and
util-linux's unshare; skipped elsewhere): a host name that resolves nowhere, a /dev/shm too small or
read-only for the data loader's worker processes, an output root on a read-only mount."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from tests.helpers import child_env, said

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or shutil.which("unshare") is None,
                                 reason="needs root and unshare to give a process a host name of its own")]
TWOPART = {"HARNESS_MODELS": "tests.models.twopart"}
NOWHERE = "no-such-host-harness-qz"
# a new UTS namespace with its own host name, then the command in it
AS_HOST = ("import os, socket, sys; socket.sethostname(sys.argv[1].encode()); "
           "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


def _resolves(name: str) -> bool:
    try:
        socket.getaddrinfo(name, None)
    except OSError:
        return False
    return True


def test_two_ranks_on_a_host_whose_name_resolves_nowhere_meet_on_loopback(tmp_path):
    """torch's launcher gave the ranks this host's name to reach its store at: a name that resolves nowhere (a
    container's, a laptop off its network) held them 300 s a try, then ended the run with a C++ traceback,
    and gloo warned once per rank before falling back to loopback. One node needs no name: loopback."""
    if _resolves(NOWHERE):
        pytest.skip(f"{NOWHERE} resolves here")
    done = subprocess.run(
        ["unshare", "-u", sys.executable, "-c", AS_HOST, NOWHERE, "-m", "harness.train", "model=twopart",
         "device=cpu", "gpus=2", "seed=1", "progress=false", "output_root=out"],
        cwd=tmp_path, env=child_env(**TWOPART), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "resolve" not in done.stderr and "c10d" not in done.stderr and "Traceback" not in done.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    record = json.loads(result.read_text())
    assert record["status"] == "success" and record["world_size"] == 2
    assert f"on {NOWHERE}" in (result.parent / "train.log").read_text()  # it ran under that name


def _with_shm(options: str, *args: str, cwd) -> subprocess.CompletedProcess:
    """python -m <args> with a tmpfs mounted with `options` over /dev/shm, in a mount namespace of its own."""
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f'mount -t tmpfs -o {options} tmpfs /dev/shm && exec "$@"', "sh", sys.executable, "-m", *args],
        cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=240)


RESNET = ("harness.train", "model=resnet", "+debug=resnet", "seed=1", "progress=false", "output_root=out")


@pytest.mark.parametrize("options", ["size=8k", "size=8k,ro"])
def test_loader_workers_without_room_in_dev_shm_are_one_line_naming_it_and_both_fixes(tmp_path, options):
    """A container's /dev/shm is 64 MB unless asked: the loader workers' queues and batches live there. A full one
    ended the run saying the disk of the output root was full (with a traceback from DataLoader's __del__ after
    it), a read-only one with torch's own line; neither said where the room was missing or what to change."""
    done = _with_shm(options, *RESNET, "model.workers=2", cwd=tmp_path)
    assert done.returncode == 1
    (line,) = said(done.stderr)
    assert line.startswith("error: the data loader's worker processes cannot share their batches (")
    assert "they hand them over in /dev/shm, " in line and "KiB free of 8 KiB" in line
    assert ("read-only here;" in line) == options.endswith(",ro")
    assert line.endswith("--shm-size=2g, or a larger tmpfs on /dev/shm), or read in the training process with "
                         "the model's workers option at 0 (model.workers=0 where it has one: python -m harness.train "
                         "--help model=NAME)")
    (result,) = (tmp_path / "out").rglob("result.json")
    record = json.loads(result.read_text())
    assert record["status"] == "failed" and record["error"]["type"] == "SharedMemoryShort"


def test_a_run_without_loader_workers_needs_no_dev_shm(tmp_path):
    """Without workers nothing is shared: the flags the loader marks its repairs in stay in this process's memory
    (they failed the run before its first step where /dev/shm could not be written)."""
    done = _with_shm("size=8k,ro", *RESNET, "model.workers=0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    assert json.loads(result.read_text())["status"] in ("success", "aborted")  # the debug preset's one epoch


def test_an_output_root_on_a_read_only_mount_is_named_as_one(tmp_path):
    """A container's read-only mount refuses root as well: "not writable by this user" sent users to chmod."""
    (tmp_path / "ro").mkdir()
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"', "sh", str(tmp_path / "ro"),
         sys.executable, "-m", "harness.train", "model=ncf", "seed=1", f"output_root={tmp_path / 'ro' / 'out'}"],
        cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and said(done.stderr) == [
        f"harness.train: error: output_root={tmp_path / 'ro' / 'out'}: {tmp_path / 'ro'} is on a read-only file "
        "system; choose another output_root"]
