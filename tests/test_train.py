"""`python -m harness.train` refusing to start: a disk already full is one line and no run folder (the
end-to-end runs are in tests/e2e/)."""
from __future__ import annotations

import os
from types import SimpleNamespace

from harness import outputs, train


def test_a_disk_already_full_is_one_line_and_leaves_no_run_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "kept.txt").write_text("a user's file\n")
    real = os.statvfs

    def full(path):  # 8 kB left on the disk, inodes to spare
        st = real(path)
        return SimpleNamespace(f_bavail=2, f_frsize=4096, f_files=st.f_files, f_favail=st.f_favail)

    monkeypatch.setattr(outputs.os, "statvfs", full)
    rc = train.main(["model=ncf", "seed=1", f"output_root={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.splitlines() == [f"harness.train: error: output_root={tmp_path / 'out'}: the disk holding {tmp_path} is "
                                "full (8 kB free; a run needs 4 MiB to start); free space or choose another output_root"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]  # no run folder, no empty train.log
    assert (tmp_path / "kept.txt").read_text() == "a user's file\n"
