"""Targets from the rules, as text: a number or named parts, higher or lower is better, never evaluated; and the
official checker's rule strings, compiled once and run as eval and exec run them."""
from __future__ import annotations

import pytest

from harness.results.read import rules
from harness.results.read.rules import parse_check, rules_target
from tests.helpers import run_cli


@pytest.mark.parametrize("expression,expected", [
    ("v['value'] >= 0.240 and v['value'] < 1", (0.24, True)),
    ("v['value']['BBOX'] >= 0.377 and v['value']['BBOX'] < 1.0 and v['value']['SEGM'] >= 0.339 and "
     "v['value']['SEGM'] < 1.0", ({"BBOX": 0.377, "SEGM": 0.339}, True)),
    ("v['value'] <= 0.058 and v['value'] > 0.0", (0.058, False)),
    ("(v['value'] <= 2.69) and v['value'] > 2.6", (2.69, False)),
    ("v['value'] >= 0.635 and v['value'] <= 1", (0.635, True)),  # the first comparison is the target
    ("(v['value'] >= 0.712 if s['global_batch_size'] < 8192 else v['value'] >= 0.706) and v['value'] < 1.0",
     (0.712, True)),
    ("s['x'] == 1", None),
])
def test_targets_are_read_from_the_expression_text(expression, expected):
    assert parse_check(expression) == expected


def test_maskrcnn_target_has_two_parts_from_mlperf_logging_rules():
    target = rules_target("maskrcnn")
    assert target.value == {"BBOX": 0.377, "SEGM": 0.339} and target.direction == "higher"
    assert target.source.endswith("training_0.7.0/closed_maskrcnn.yaml")
    assert rules_target("rnnt").direction == "lower"
    assert rules_target("../../etc/passwd") is None  # a name from a log is never made into a path


def test_code_in_a_rules_expression_is_read_as_text_and_never_run(tmp_path):
    from harness.results.read.rules import _target_in

    marker = tmp_path / "ran"
    rules = tmp_path / "rules.yaml"
    rules.write_text("- KEY:\n    NAME: eval_accuracy\n    ATLEAST_ONE_CHECK: \"v['value'] >= 0.5 and "
                     f"__import__('pathlib').Path({str(marker)!r}).touch() is None\"\n")
    assert _target_in(str(rules)).value == 0.5
    assert not marker.exists()


def test_a_registered_model_s_own_rules_file_gives_its_parts():
    out = run_cli("harness.check.show", "targets", "twopart", env={"HARNESS_MODELS": "tests.models.twopart"})
    assert out.returncode == 0, out.stderr
    assert "{'A': 0.9, 'B': 0.85} (higher is better)" in out.stdout and "twopart_rules.yaml" in out.stdout


@pytest.mark.parametrize("source", ["v['value'] >= 0.24", "s['x'] = 1"])
def test_a_rule_string_compiles_once_and_runs_as_eval_and_exec_run_it(source):
    state: dict = {"s": {}}
    if "=" in source and ">=" not in source:
        rules.cached_exec(source, state, {})
        rules.cached_exec(source, state, {})
        assert state["s"] == {"x": 1}
    else:
        assert rules.cached_eval(source, state, {"v": {"value": 0.25}}) is True
        assert rules.cached_eval(source, state, {"v": {"value": 0.2}}) is False
    assert (source, "eval" if ">=" in source else "exec") in rules._compiled
    with pytest.raises(SyntaxError):  # a rule that does not compile fails where the checker expects it to
        rules.cached_eval("v[", state, {})
