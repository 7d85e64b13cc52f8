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


def test_a_cell_larger_than_the_gpu_is_not_run_and_says_what_it_needs(tmp_path, monkeypatch):
    """Llama 3.1 8B on one H100 (79 GiB): its row says so instead of failing the check with an out-of-memory,
    and the table marks it without failing the check (nothing of this card's was lost)."""
    monkeypatch.setattr(check_mod, "THROUGHPUT", {"llama31_8b": ["model.batch_size=1"]})
    monkeypatch.setattr(check_mod, "VARIANTS", [("llama31_8b:fp8", "llama31_8b", ["fp8=true"], "fp8")])
    monkeypatch.setattr(check_mod, "MLPERF_BATCH", {"llama31_8b": ["model.batch_size=1"]})
    check = check_mod.Check(tmp_path / "out", tmp_path / "work", 60, smoke=False)
    monkeypatch.setattr(check, "run", lambda *a, **k: pytest.fail("a cell too large for the GPU was started"))
    check_mod.throughput(check, 60, 79.2)
    need = check_mod.GPU_GIB["llama31_8b"]
    assert [(r["key"], r["status"], r["note"]) for r in check.rows] == [
        (key, "too large", f"needs a GPU of {need} GiB or more; this one has 79.2")
        for key in ("throughput:llama31_8b", "throughput:llama31_8b:fp8")]
    table = importlib.import_module("gpu_check_table")
    page, counts = table.table({"machine": {"gpu": "H100"}, "rows": check.rows}, None)
    assert counts == {table.TOO_LARGE: 2} and "needs a GPU of" in page


@pytest.fixture(autouse=True)
def _fresh_rows(monkeypatch):
    """main() narrows the check's row lists in place: each test gets copies."""
    for name in ("THROUGHPUT", "MLPERF_BATCH"):
        monkeypatch.setattr(check_mod, name, dict(getattr(check_mod, name)))
    for name in ("VARIANTS", "EMBEDDED", "REAL_DATA"):
        monkeypatch.setattr(check_mod, name, list(getattr(check_mod, name)))


@pytest.mark.parametrize("argv,said", [
    (["--models", "nope"], "unknown model(s) ['nope']"),
    (["--models", "waveglow", "--only", "real"], "no row of the check in real is of model(s) ['waveglow']"),
])
def test_models_without_a_row_are_named_before_anything_is_written(tmp_path, capsys, argv, said):
    with pytest.raises(SystemExit) as exit_:
        check_mod.main([str(tmp_path / "out"), "--work", str(tmp_path / "work"), *argv])
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()


def test_part_2_for_two_models_runs_their_real_data_rows(tmp_path, monkeypatch):
    """Part 2's real-data rows are of models whose throughput cells are part 1's: `--part 2 --models maskrcnn
    resnet` runs those rows (it was refused: the models were looked for among part 2's cells alone)."""
    ran: dict[str, object] = {}
    monkeypatch.setattr(check_mod, "machine", lambda: {})
    monkeypatch.setattr(check_mod, "datasets", lambda *_: None)
    monkeypatch.setattr(check_mod, "warm_caches", lambda *_: None)
    monkeypatch.setattr(check_mod, "throughput", lambda *_: ran.setdefault("throughput", [
        *check_mod.THROUGHPUT, *(v[0] for v in check_mod.VARIANTS)]))
    monkeypatch.setattr(check_mod, "real_data", lambda *_: ran.setdefault("real", list(
        check_mod.REAL_DATA)))
    monkeypatch.setattr(check_mod.gpu_check_table, "main", lambda *_: 0)
    monkeypatch.setenv("CHECK_COMMIT", "test")
    assert check_mod.main([str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--part", "2",
                           "--models", "maskrcnn", "resnet"]) == 0
    assert ran == {"throughput": [], "real": ["maskrcnn:nvimgcodec", "resnet:nvimgcodec"]}
