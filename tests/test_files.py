"""A write the disk cannot hold: the file keeps its whole lines, the run learns it once, and the room
reserved for the run's own end is given back (the end-to-end case: tests/e2e/test_run_ends.py)."""
from __future__ import annotations

import errno
import logging
import os

import pytest

from harness import files
from tests.helpers import fill_disk


@pytest.fixture(autouse=True)
def fresh():
    files.reset()
    yield
    files.reset()


def test_a_line_the_disk_cannot_hold_is_taken_back_whole(tmp_path, monkeypatch):
    f = files.RecordFile(tmp_path / "log")
    f.write_line('{"a": 1}')
    real_write = os.write

    def half_then_full(fd, data):  # the disk takes a few bytes of the line, then no more
        if len(data) > 4:
            real_write(fd, bytes(data[:4]))
            return 4
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "write", half_then_full)
    with pytest.raises(files.DiskFull, match=r"^cannot write .*log: the disk is full \(No space left on device\); "
                                            r"free space or choose another output_root$"):
        f.write_line('{"b": 2}')
    monkeypatch.undo()
    assert (tmp_path / "log").read_text() == '{"a": 1}\n'
    with pytest.raises(files.DiskFull):  # the run learns it at its next step
        files.raise_if_full()


def test_an_existing_file_is_never_appended_to_unless_asked(tmp_path):
    (tmp_path / "log").write_text("earlier\n")
    with pytest.raises(FileExistsError):
        files.RecordFile(tmp_path / "log")
    f = files.RecordFile(tmp_path / "log", exclusive=False)
    f.write_line("more")
    f.close()
    assert (tmp_path / "log").read_text() == "earlier\nmore\n"


def test_the_first_failed_write_frees_the_reserve_and_only_the_first_is_kept(tmp_path):
    reserve = files.Reserve(tmp_path / ".reserve", size=1 << 16)
    assert (tmp_path / ".reserve").stat().st_blocks * 512 >= 1 << 16  # real blocks, not a hole
    first = files.trip(tmp_path / "a", OSError(errno.ENOSPC, "full"))
    files.trip(tmp_path / "b", OSError(errno.EDQUOT, "quota"))
    assert not (tmp_path / ".reserve").exists()
    with pytest.raises(files.DiskFull) as raised:
        files.raise_if_full()
    assert raised.value is first and str(first).startswith(f"cannot write {tmp_path / 'a'}")
    reserve.release()  # twice is fine


def test_a_log_file_that_fills_trips_the_run_instead_of_printing_tracebacks(tmp_path, capsys):
    handler = logging.FileHandler(tmp_path / "train.log")
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        files.watch_logging()
        handler.stream.close()
        handler.stream = _Full()  # type: ignore[assignment]
        logging.getLogger("harness.test").warning("a line the disk cannot hold")
    finally:
        root.removeHandler(handler)
        handler.close()
    assert "Logging error" not in capsys.readouterr().err
    with pytest.raises(files.DiskFull, match="train.log"):
        files.raise_if_full()


class _Full:
    """A file on a full disk."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_file_size_limit_is_named_as_such():
    err = files.DiskFull("out/mlperf.log", OSError(errno.EFBIG, "File too large"))
    assert str(err) == ("cannot write out/mlperf.log: a file-size limit (ulimit -f) stops it (File too large); "
                        "free space or choose another output_root")
    assert files.is_full(err) and not files.is_full(OSError(errno.EACCES, "denied"))


@pytest.mark.parametrize("data", ["new text that the disk cannot hold\n", b"\x89PNG new image"])
def test_a_whole_file_the_disk_cannot_hold_leaves_the_old_one_whole_and_no_partial_file(tmp_path, monkeypatch, data):
    target = tmp_path / "report.md"
    target.write_text("the old report\n")
    fill_disk(monkeypatch, room=5)
    with pytest.raises(files.DiskFull, match=rf"^cannot write {target}: the disk is full \(No space left on device\); "
                                            "free space or write elsewhere$"):
        files.write_atomic(target, data, hint="free space or write elsewhere")
    monkeypatch.undo()
    assert target.read_text() == "the old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file, no 0-byte file
    files.write_atomic(target, data)  # with room, it is replaced in one step
    assert target.read_bytes() == (data.encode() if isinstance(data, str) else data)
    assert oct(target.stat().st_mode & 0o777) == "0o644" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_a_file_that_cannot_be_written_for_another_reason_is_named_in_one_line(tmp_path):
    (tmp_path / "taken").mkdir()  # a folder where the file should go
    with pytest.raises(files.WriteFailed, match=rf"^cannot write {tmp_path / 'taken'}: it is not a regular file"):
        files.write_atomic(tmp_path / "taken", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and not any((tmp_path / "taken").iterdir())


def test_a_link_is_written_through_and_a_node_that_is_no_file_is_refused_untouched(tmp_path):
    kept = tmp_path / "kept" / "table.md"
    kept.parent.mkdir()
    kept.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(kept)
    files.write_atomic(link, "new\n")
    assert link.is_symlink() and kept.read_text() == "new\n"  # the link stays; its file has the new text
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # a device or a pipe: the rename would put a plain file in its place
    with pytest.raises(files.WriteFailed, match=rf"^cannot write {pipe}: it is not a regular file"):
        files.write_atomic(pipe, "x")
    assert pipe.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["kept", "link.md", "pipe"]


def test_a_whole_file_keeps_to_the_user_s_umask(tmp_path):
    """umask 077 (a shared cluster's private runs): result.json, config.yaml and system.json came out 0644,
    readable by everyone, beside mlperf.log and train.log at 0600: write_atomic widened mkstemp's 0600 to 0644
    whatever the umask. It now widens it as open() would, no further."""
    old = os.umask(0o077)
    try:
        files.write_atomic(tmp_path / "private.json", "{}\n")
    finally:
        os.umask(old)
    assert oct((tmp_path / "private.json").stat().st_mode & 0o777) == "0o600"
