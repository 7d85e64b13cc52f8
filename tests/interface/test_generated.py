"""A generated dataset is written once, verified on every use, and rewritten when it was damaged."""
from __future__ import annotations

import json
import threading

import pytest

from harness.interface import generated


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


@pytest.mark.parametrize("damage", ["truncate", "edit", "delete"])
def test_a_damaged_file_is_detected_and_regenerated(tmp_path, damage):
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
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    assert len(calls) == 2 and generated.verify(path) is None


def test_other_parameters_or_version_regenerate(tmp_path):
    calls: list = []
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 100}, _writer(calls))
    generated.ensure(tmp_path / "ds", "gen", 1, {"n": 200}, _writer(calls))
    generated.ensure(tmp_path / "ds", "gen", 2, {"n": 200}, _writer(calls))
    assert len(calls) == 3


def test_files_no_generator_wrote_are_never_overwritten(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "ratings.csv").write_text("a user's real data\n")
    with pytest.raises(FileExistsError, match="no generator wrote"):
        generated.ensure(tmp_path / "ds", "gen", 1, {}, _writer([]))
    assert (tmp_path / "ds" / "ratings.csv").read_text() == "a user's real data\n"


def test_concurrent_runs_generate_once(tmp_path):
    calls: list = []
    threads = [threading.Thread(target=generated.ensure, args=(tmp_path / "ds", "gen", 1, {}, _writer(calls)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and generated.verify(tmp_path / "ds") is None
