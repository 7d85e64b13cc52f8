"""A generated dataset is written once, verified on every use, rewritten for another generation, and never
deleted when it holds what its generator did not write."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import threading

import pytest

from harness.interface import DataError, generated


def _writer(calls: list):
    def write(folder):
        calls.append(folder)
        (folder / "data.csv").write_text("a,b\n" + "1,2\n" * 100)
        (folder / "sub").mkdir()
        (folder / "sub" / "more.txt").write_text("x" * 50)
    return write


def test_written_once_then_reused(tmp_path):
    calls: list = []
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    assert path == tmp_path / "ds" and len(calls) == 1
    stamp = json.loads((path / generated.STAMP).read_text())
    assert set(stamp["files"]) == {"data.csv", "sub/more.txt"} and stamp["params"] == {"n": 100}
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    assert len(calls) == 1
    assert oct((path).stat().st_mode & 0o777) == "0o755"


def snapshot(folder) -> dict:
    """Every entry under `folder` (links not followed): a file's bytes, a link's target, a folder's name."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = (os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else "dir")
    return out


@pytest.mark.parametrize("damage", ["truncate", "edit", "delete"])
def test_a_folder_that_differs_from_its_stamp_is_the_users_and_is_kept(tmp_path, damage):
    calls: list = []
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    target = path / "data.csv"
    if damage == "truncate":
        target.write_text(target.read_text()[:20])
    elif damage == "edit":
        target.write_text(target.read_text().replace("1,2", "2,1", 1))  # same size, other content
    else:
        target.unlink()
    assert generated.verify(path) is not None
    before = snapshot(path)
    for params in ({"n": 100}, {"n": 200}):  # nor when other parameters are asked for
        with pytest.raises(generated.UsersFolder) as caught:
            generated.ensure(tmp_path / "ds", "gen", 1, params, _writer(calls))
        message = str(caught.value)
        assert message.startswith(f"{path} differs from what its generator wrote (data.csv ")
        assert f"kept as yours: to regenerate it on purpose, delete it (rm -r {path}) and run again" in message
    assert len(calls) == 1 and snapshot(path) == before
    shutil.rmtree(path)  # on purpose: the next use writes it again
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    assert len(calls) == 2 and generated.verify(path) is None


@pytest.mark.parametrize("added", ["notes.txt", "sub/extra.txt", "extra_class/", "link"])
def test_files_a_user_added_beside_the_generated_ones_are_never_deleted(tmp_path, added):
    calls: list = []
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    if added == "extra_class/":
        (path / "extra_class").mkdir()
        (path / "extra_class" / "a.JPEG").write_bytes(b"mine")
    elif added == "link":
        (path / "link").symlink_to(path / "sub")
    else:
        (path / added).write_text("the user's own notes\n")
    before = snapshot(path)
    for params in ({"n": 100}, {"n": 200}):
        with pytest.raises(generated.UsersFolder, match=f"^{path} differs from what its generator wrote "
                                                        f"\\({added.rstrip('/')}/? is not a file its generator wrote\\)"):
            generated.ensure(tmp_path / "ds", "gen", 1, params, _writer(calls))
        with pytest.raises(generated.UsersFolder):
            generated.check_kept(path)  # what harness.train asks before it makes a run directory
    assert len(calls) == 1 and snapshot(path) == before


def test_other_parameters_or_version_regenerate(tmp_path):
    calls: list = []
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    (path / generated.CACHE).mkdir()  # a loader's cache beside the data is the harness's own
    (path / generated.CACHE / "arrays.npz").write_bytes(b"cached")
    generated.check_kept(path)
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 200}, _writer(calls))
    generated.ensure(tmp_path / "ds", "gen", 2, {"n": 200}, _writer(calls))
    assert len(calls) == 3 and generated.verify(path, "gen", 2, {"n": 200}) is None


def test_files_no_generator_wrote_are_never_overwritten(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "ratings.csv").write_text("a user's real data\n")
    with pytest.raises(DataError, match="no generator wrote"):
        generated.ensure(tmp_path / "ds", "gen", 1, {}, _writer([]))
    assert (tmp_path / "ds" / "ratings.csv").read_text() == "a user's real data\n"


@pytest.mark.parametrize("stamp,said", [("{not json", "cannot be read"),
                                         ('{"files": {"../outside.txt": {}}}', "lists '../outside.txt', outside the")])
def test_a_stamp_that_cannot_be_read_or_names_a_path_outside_leaves_the_folder_alone(tmp_path, stamp, said):
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer([]))
    (path / generated.STAMP).write_text(stamp)
    before = snapshot(path)
    with pytest.raises(generated.UsersFolder, match=f"^{path} differs from what its generator wrote \\(its "
                                                    f"GENERATED.json {re.escape(said)}"):
        generated.ensure(path, "gen", 1, {"n": 100}, _writer([]))
    assert snapshot(path) == before


def test_a_disk_that_fills_while_generating_is_one_line_naming_the_path_and_data_root(tmp_path):
    def fills(folder):
        (folder / "data.csv").write_text("a,b\n")
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "data.csv"))

    with pytest.raises(generated.GenerationFull) as caught:
        generated.ensure(tmp_path / "ds", "gen", 1, {}, fills)
    message = str(caught.value)
    assert message.startswith(f"cannot write {tmp_path}/.ds-") and "No space left on device" in message
    assert "set data_root to a folder on a disk with room" in message and "output_root" not in message
    assert "\n" not in message and sorted(p.name for p in tmp_path.iterdir()) == [".lock-ds"]  # nothing half-written


def test_concurrent_runs_generate_once(tmp_path):
    calls: list = []
    threads = [threading.Thread(target=generated.ensure, args=(tmp_path / "ds", "gen", 1, {}, _writer(calls)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and generated.verify(tmp_path / "ds") is None


def test_the_check_before_a_run_waits_while_another_process_rewrites_the_folder(tmp_path):
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer([]))
    checked = threading.Event()

    def check():
        generated.check_kept(path)  # raises, and never sets the event, if it reads the folder half-written
        checked.set()

    with generated._locked(path):  # as ensure holds it while it rewrites the folder (torchrun's rank 0)
        shutil.rmtree(path / "sub")
        thread = threading.Thread(target=check)
        thread.start()
        assert not checked.wait(0.3)
        (path / "sub").mkdir()
        (path / "sub" / "more.txt").write_text("x" * 50)
    thread.join(10)
    assert checked.is_set()


_KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from harness.interface import generated

def write(folder):
    (folder / "part_1.bin").write_bytes(b"x" * 1000)
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer ends a generator: no handler, no finally

generated.ensure(Path(sys.argv[1]), "gen", int(sys.argv[2]), {"n": 100}, write)
"""


@pytest.mark.parametrize("first", [True, False], ids=["first generation", "regeneration"])
def test_a_generator_killed_while_it_writes_leaves_no_partial_dataset_and_the_next_run_writes_it(tmp_path, first):
    import subprocess
    import sys

    from tests.helpers import REPO

    if not first:
        generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer([]))
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "ds"), "2"], cwd=REPO)
    assert killed.returncode == -9
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ds-")]  # what the kill left beside it
    if first:
        assert not (tmp_path / "ds").exists()
    else:
        assert generated.verify(tmp_path / "ds", "gen", 1) is None  # the old generation is whole
    calls: list = []
    generated.ensure(tmp_path / "ds", "gen", 2, {"n": 100}, _writer(calls))
    assert len(calls) == 1 and generated.verify(tmp_path / "ds", "gen", 2, {"n": 100}) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock-ds", "ds"]  # the partial dataset is gone


def _read_only_storage(monkeypatch, tmp_path):
    """What a read-only mount answers the first write (the lock file): EROFS. A real read-only mount needs
    root's mount(2); the lock is where ensure first writes, so it stands for the whole mount."""
    def refused(folder):
        raise OSError(errno.EROFS, "Read-only file system", str(folder.parent / f".lock-{folder.name}"))

    monkeypatch.setattr(generated, "_locked", refused)
    monkeypatch.setattr(generated.os, "access", lambda path, mode: False)


def test_a_whole_dataset_on_read_only_storage_is_read_as_it_is(tmp_path, monkeypatch):
    calls: list = []
    path = generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    before = snapshot(tmp_path)
    _read_only_storage(monkeypatch, tmp_path)
    assert generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls)) == path and len(calls) == 1
    generated.check_kept(path)  # the check before a run: a whole dataset needs no write
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("state", ["missing", "other parameters"])
def test_a_dataset_that_must_be_written_on_read_only_storage_is_one_line_naming_data_root(tmp_path, monkeypatch,
                                                                                          state):
    calls: list = []
    if state == "other parameters":
        generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    _read_only_storage(monkeypatch, tmp_path)
    with pytest.raises(generated.ReadOnlyData) as caught:
        generated.ensure(tmp_path / "ds", "gen", 1, {"n": 5}, _writer(calls))
    assert str(caught.value) == (f"cannot generate the dataset {tmp_path / 'ds'}: {tmp_path}/.lock-ds cannot be "
                                 "written (Read-only file system); set data_root to a writable folder")
    if state == "missing":  # said before the run makes its directory
        with pytest.raises(generated.ReadOnlyData, match=f"cannot generate the dataset {tmp_path / 'ds'}: {tmp_path} "
                                                          "cannot be written"):
            generated.check_kept(tmp_path / "ds")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a folder's permissions")
def test_a_folder_the_user_cannot_write_is_named_before_the_run(tmp_path):
    locked = tmp_path / "theirs"
    locked.mkdir(mode=0o555)
    with pytest.raises(generated.ReadOnlyData, match="set data_root to a writable folder"):
        generated.check_kept(locked / "ds")


def test_only_a_leftover_the_generator_marked_is_removed_never_a_users_folder_named_like_one(tmp_path, caplog):
    """Before, any `.ds-*` folder beside the dataset counted as a killed writer's and was deleted: a user's
    `.ds-mybackup`, notes and all. Only a folder the writer marked as its own, under that name, is removed."""
    import subprocess
    import sys

    from tests.helpers import REPO

    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "ds"), "1"], cwd=REPO)
    assert killed.returncode == -9
    (leftover,) = tmp_path.glob(".ds-*")
    shutil.copytree(leftover, tmp_path / ".ds-copy")  # a copy of one: its mark names another folder
    for name in (".ds-mybackup", ".ds-old-abcd1234", ".ds-abcd1234"):  # the last two: mkdtemp's very pattern
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes").write_text("hi\n")
    before = {p.name: snapshot(p) for p in tmp_path.glob(".ds-*") if p != leftover}
    with caplog.at_level("WARNING", logger="harness.generated"):
        generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer([]))
    assert [r.getMessage() for r in caplog.records] == [f"removing {leftover}: a partial dataset a killed generator left"]
    assert {p.name: snapshot(p) for p in tmp_path.glob(".ds-*")} == before  # every other one kept, untouched
    assert generated.verify(tmp_path / "ds", "gen", 1, {"n": 100}) is None
