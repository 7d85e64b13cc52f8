"""The official checker as harness.results.read.official runs it, its rule code compiled once
(harness.results.read.rules.cached_eval) and its line parser handed the records harness.results.read.formats has just decoded,
says what mlperf-logging's own checker says in a fresh interpreter that never imported the harness: the
verdict and every message, on real logs of four rounds and on broken ones."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.results.read import official, rules
from harness.results.read.parse import parse_lines

OFFICIAL = """
import json, sys
from mlperf_logging.compliance_checker import mlp_compliance
out = []
for path, version in json.loads(sys.argv[1]):
    checker = mlp_compliance.make_checker("training", version, quiet=True, werror=False)
    valid = checker.check_file(path, f"training_{version}/common.yaml")
    out.append([valid, [*checker.overwritable.values(), *checker.not_overwritable]])
print(json.dumps(out))
"""

LOGS = [("v0.7/NVIDIA/results/dgxa100_n2_ngc20.06_pytorch/gnmt/result_3.txt", "0.7.0"),
        ("v2.1/NVIDIA/results/dgxa100_ngc22.04_mxnet/resnet/result_1.txt", "2.1.0"),
        ("v3.0/NVIDIA/results/dgxh100_ngc23.04_merlin_hugectr/dlrm_dcnv2/result_2.txt", "3.0.0"),
        ("v4.0/NVIDIA/results/eos_n8_ngc24.04_nemo/stable_diffusion/result_0.txt", "4.0.0")]


def _broken(tmp_path: Path, source: Path) -> list[Path]:
    """The gnmt log with a required key gone, and with every evaluation below the target."""
    lines = source.read_text(encoding="latin-1").splitlines(keepends=True)
    missing = tmp_path / "missing.txt"
    missing.write_text("".join(x for x in lines if '"key": "global_batch_size"' not in x), encoding="latin-1")
    low = tmp_path / "low.txt"
    low.write_text("".join(x.replace('"value": 0.2', '"value": 0.1') if "eval_accuracy" in x else x for x in lines),
                   encoding="latin-1")
    return [missing, low]


def test_verdicts_and_messages_are_the_official_checker_s_own(trees_dir, tmp_path):
    cases = [(trees_dir / p, v) for p, v in LOGS]
    cases += [(p, "0.7.0") for p in _broken(tmp_path, cases[0][0])]
    proc = subprocess.run([sys.executable, "-c", OFFICIAL, json.dumps([[str(p), v] for p, v in cases])],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    theirs = json.loads(proc.stdout)
    for (path, version), (valid, messages) in zip(cases, theirs):
        lines = path.read_text(encoding="latin-1").splitlines(keepends=True)
        parse_lines(lines, str(path))  # as parse_file does: the records are decoded first
        verdict = official.judge(lines, rules.choose(None, explicit=version))
        assert (verdict.status == "pass") == valid, (path, verdict.messages)
        assert verdict.messages == messages, path
    assert [valid for valid, _ in theirs] == [True, True, True, True, False, False]


def test_a_ctrl_c_during_a_rule_stops_the_command_and_fails_no_log(trees_dir, monkeypatch):
    # the checker evaluates each rule under a bare `except:`: a Ctrl-C landing there was swallowed, the log got
    # "Failed executing CHECK code" and `harness.check.show` went on to print every other log, exit 0
    path = trees_dir / LOGS[0][0]
    lines = path.read_text(encoding="latin-1").splitlines(keepends=True)
    parse_lines(lines, str(path))
    evaluated: list[str] = []

    def interrupted(source, globals=None, locals=None):
        evaluated.append(source)
        if len(evaluated) == 1:
            signal.raise_signal(signal.SIGINT)  # the terminal's Ctrl-C, landing inside the first rule
        return rules.cached_eval(source, globals, locals)

    monkeypatch.setattr(official, "cached_eval", interrupted)
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a command has it
    try:
        with pytest.raises(KeyboardInterrupt):
            official.judge(lines, rules.choose(None, explicit="0.7.0"))
    finally:
        signal.signal(signal.SIGINT, saved)
    assert len(evaluated) > 1  # the check was let finish, then the Ctrl-C came out of it
    monkeypatch.undo()
    assert official.judge(lines, rules.choose(None, explicit="0.7.0")).status == "pass"  # nothing left held
