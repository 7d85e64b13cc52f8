"""What `python -m harness.bench` says before its first cell (harness/bench/suite.py announce): on a host where
PyTorch sees no GPU, the full-size cells fall back to the CPU, and their time is not made up."""
from __future__ import annotations

import pytest

import harness.bench as bench

CPU_HOST = {"machine": "CPU", "accelerator": "CPU", "gpu_count": 0, "driver": None, "torch": "2", "cuda": None,
            "cudnn": None, "python": "3", "host": "h", "cpu": "c", "date": "2026-12-05T00:00:00"}


def _said(argv: list[str], tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    monkeypatch.setattr(bench, "machine", lambda: dict(CPU_HOST))
    # a budget no cell fits in: the start-up lines are printed and no cell runs (exit status 3)
    assert bench.main([*argv, "--budget-min", "0.001", "--out", str(tmp_path / "b")]) == bench.EXIT_BUDGET
    return capsys.readouterr().out.splitlines()


def test_without_a_gpu_the_full_size_suite_on_the_cpu_says_so_and_gives_no_made_up_estimate(tmp_path, monkeypatch,
                                                                                           capsys):
    lines = _said(["--models", "bert_base", "ncf"], tmp_path, monkeypatch, capsys)
    assert lines[0] == ("note: PyTorch sees no GPU here, so these are the full-size (real-scale) cells on the CPU; "
                        "--smoke is the quick check that each model runs (its debug preset, 2 steps)")
    assert lines[1] == (f"2 cells (0 kept from {tmp_path / 'b'}) -> 2 to run, no time estimate for full-size cells "
                        "on a CPU (the suite's step times are GPU figures); each cell is stopped after --timeout 600 s; CPU")
    assert not any("estimated" in line for line in lines)


def test_a_cpu_asked_for_gets_no_note_and_smoke_keeps_its_measured_estimate(tmp_path, monkeypatch, capsys):
    lines = _said(["--models", "ncf", "--device", "cpu"], tmp_path, monkeypatch, capsys)
    assert not any(line.startswith("note:") for line in lines) and "no time estimate" in lines[0]
    lines = _said(["--models", "ncf", "--smoke"], tmp_path / "s", monkeypatch, capsys)
    assert lines[0].endswith("-> 1 to run, estimated 0.0 min; CPU")  # SMOKE_S (3 s, measured), two at a time
