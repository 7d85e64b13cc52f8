"""A model's data module said from the command line (`python -m reference_models.gnmt.data DATA_DIR`):
the folder in one line, or the usage, or the DataError reading it, each one line with exit status 1."""
from __future__ import annotations

import pytest

from harness.interface import DataError
from harness.interface.findings import describe_command


def _describe(folder: str) -> str:
    if folder == "missing":
        raise DataError("no ratings.csv in missing: point dataset.path at an unpacked MovieLens folder")
    return f"{folder}: 3 users, 4 items"


def test_the_folder_is_one_line_and_a_bad_one_its_error(capsys):
    describe_command("python -m m.data DATA_DIR", _describe, ["ml-20m"])
    assert capsys.readouterr().out == "ml-20m: 3 users, 4 items\n"
    with pytest.raises(SystemExit) as exit_:
        describe_command("python -m m.data DATA_DIR", _describe, ["missing"])
    assert exit_.value.code == "error: no ratings.csv in missing: point dataset.path at an unpacked MovieLens folder"
    with pytest.raises(SystemExit) as exit_:
        describe_command("python -m m.data DATA_DIR", _describe, [])
    assert exit_.value.code == "usage: python -m m.data DATA_DIR"
