"""Folder options that would put a run or its data at the file system's root are refused in one line."""
from __future__ import annotations

import pytest

from harness.config import compose
from harness.errors import ConfigError
from tests.helpers import run_cli, said


@pytest.mark.parametrize("overrides, message", [
    (["output_root=  "], "output_root is empty, which would put runs at the file system's root"),
    (["data_root="], "data_root is empty, which would put data at the file system's root"),
    (["data_root=${oc.env:HARNESS_TEST_UNSET,''}/sets"], "data_root=${oc.env:HARNESS_TEST_UNSET,''}/sets: "
                                                         "${oc.env:HARNESS_TEST_UNSET,''} is empty"),
    (["model=gnmt", "dataset.path=${run_id}"], "dataset.path is empty"),
])
def test_an_empty_root_or_one_an_interpolation_leaves_empty_is_refused(overrides, message):
    with pytest.raises(ConfigError, match="^" + message.replace("$", r"\$").replace("{", r"\{")):
        compose(overrides)


def test_an_empty_root_on_the_command_line_exits_2_and_writes_nothing(tmp_path):
    out = run_cli("harness.train", "model=ncf", "output_root=", cwd=tmp_path)
    assert out.returncode == 2 and len(said(out.stderr)) == 1, out.stderr
    assert said(out.stderr)[0].startswith("harness.train: error: output_root is empty")
    assert list(tmp_path.iterdir()) == []


def test_a_runs_or_sweeps_entry_that_is_no_folder_is_refused_before_anything_is_written(tmp_path):
    from harness.outputs import check_paths, claim_sweep_dir

    (tmp_path / "runs").symlink_to(tmp_path / "gone")  # a link to a folder no longer there
    with pytest.raises(ConfigError, match=f"^output_root={tmp_path}: {tmp_path / 'runs'} is not a folder"):
        check_paths(compose([f"output_root={tmp_path}"]))
    (tmp_path / "sweeps").write_text("")
    with pytest.raises(ConfigError, match=f"^cannot make {tmp_path / 'sweeps'}/.*: {tmp_path / 'sweeps'} is not a "):
        claim_sweep_dir(str(tmp_path), "ncf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "sweeps"]
