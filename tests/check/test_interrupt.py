"""Ctrl-C on `python -m harness.check`, `harness.check.show` and `harness.report` ends them as it ends harness.train: one
line, exit 130, no KeyboardInterrupt traceback from the command or from any of its worker processes, no file
left behind. End-to-end by necessity (a real process group and a real SIGINT): about 2 s each."""
from __future__ import annotations

import pytest

from tests.helpers import ctrl_c, has_children


@pytest.fixture
def many_logs(fixtures_dir, tmp_path):
    """200 copies of one published v0.7 log: enough work that the signal lands mid-way."""
    text = (fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(200):
        (logs / f"result_{i}.txt").write_bytes(text)
    return logs


def test_ctrl_c_on_check_is_one_line_and_exit_130(many_logs, tmp_path):
    before = sorted(p.name for p in many_logs.iterdir())
    rc, out, err = ctrl_c("harness.check", str(many_logs), "--jobs", "2", cwd=tmp_path,
                          when=lambda proc, lines: any(line.startswith("PASS") for line in lines))
    assert rc == 130, err
    assert err.splitlines() == [next(line for line in err.splitlines())]
    assert err.startswith("harness.check: interrupted; ") and "log(s) checked before it" in err
    assert "Traceback" not in err + out and "KeyboardInterrupt" not in err + out
    assert sorted(p.name for p in many_logs.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]  # no compliance_checker.log


def test_ctrl_c_on_report_is_one_line_and_exit_130(many_logs, tmp_path):
    rc, out, err = ctrl_c("harness.report", str(many_logs), "--jobs", "2", "--json", str(tmp_path / "r.json"),
                          cwd=tmp_path, when=lambda proc, lines: has_children(proc))
    assert rc == 130, err
    assert err.strip().splitlines() == ["harness.report: interrupted; each file it writes is whole or not there"]
    assert "Traceback" not in out and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]  # no report.json, whole or part


def test_ctrl_c_on_show_is_one_line_and_exit_130(many_logs, tmp_path):
    # each log forty times: after the first (which pays for the imports) a log takes ~2.5 ms, so 200 ended ~0.5 s
    # after the first line, within reach of a test process starved on a busy host; 2,000 left ~5 s, and a
    # fresh-clone suite on 2 cores once saw all of them shown before its Ctrl-C landed; 8,000 leave ~20 s
    logs = sorted(str(p) for p in many_logs.iterdir()) * 40
    rc, out, err = ctrl_c("harness.check.show", "checked", *logs, cwd=tmp_path,
                          when=lambda proc, lines: len(lines) >= 1)
    assert rc == 130, err
    assert err.strip().splitlines() == ["harness.check.show: interrupted; what it printed before is whole"]
    assert 1 <= len(out.splitlines()) < len(logs) and "Traceback" not in out
