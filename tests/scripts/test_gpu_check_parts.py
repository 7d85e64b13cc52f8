"""scripts/lab/gpu_check.py's calls: each phase must belong to some call and have the time it needs, or
the check's table says NOT RUN for rows that never had a chance."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "scripts" / "lab"))
_spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts" / "lab" / "gpu_check.py")
check_mod = importlib.util.module_from_spec(_spec)
sys.modules["gpu_check"] = check_mod  # main()'s help reads its docstring through sys.modules
_spec.loader.exec_module(check_mod)


def test_every_phase_runs_in_some_call_and_the_tests_in_the_call_with_room_for_them():
    parts = check_mod.PARTS
    assert set().union(*parts.values()) == {"tests", "embedded", "throughput", "real"}
    assert [n for n, phases in parts.items() if "tests" in phases] == [3]


def test_the_tests_get_most_of_part_3_and_all_of_a_call_of_their_own():
    a, b = check_mod.deadlines(check_mod.PARTS[3], 3, 520)
    assert (a, b) == (0.65 * 520, 520)
    assert check_mod.deadlines({"tests"}, None, 600) == (600, 600)  # --only tests: no phase B to leave time for
    assert check_mod.deadlines(check_mod.PARTS[1], 1, 520) == (260, 520)
    a, b = check_mod.deadlines(check_mod.PARTS[2], 2, 500)
    assert a < b < 500  # phase C, the real data, keeps the last 40%


def test_an_unknown_variant_is_named_before_anything_is_written(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        check_mod.main([str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--variants", "bert_large:nope"])
    assert exit_.value.code == 2
    assert "unknown variant(s) ['bert_large:nope']" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()
