"""Reading a log says what it says; checking it (the official and RCP checkers, the sanity pass) is a step of
its own, whose verdicts the report joins with the facts; importing the reader changes nothing in
mlperf_logging, and a check leaves it as it ships."""
from __future__ import annotations

import importlib
import json

import pytest
import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from harness.results.read import checking, official
from harness.results.read.parse import parse_file, read_file
from tests.results.read.test_formats import _v05


def _as_shipped() -> None:
    assert mlp_compliance.yaml is yaml
    assert "eval" not in vars(mlp_compliance) and "exec" not in vars(mlp_compliance)
    parser = importlib.import_module("mlperf_logging.compliance_checker.mlp_parser.ruleset_070")
    assert parser.json is json


@pytest.fixture
def gnmt_log(fixtures_dir):
    return fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt"


def test_parsing_an_official_log_gives_its_facts_and_checking_gives_the_verdicts(gnmt_log):
    facts = parse_file(gnmt_log)
    assert facts.check is None and facts.check_ruleset is None and facts.epoch_unit == "epochs"
    log = read_file(gnmt_log)
    before = log.facts.to_dict()
    checked = checking.check(log)
    assert checked.verdict is not None and checked.verdict.status == "pass"
    assert checked.ruleset is not None and checked.ruleset.label == "0.7.0"
    assert checked.rcp is not None and checked.rcp.value == facts.epochs_to_converge
    run = checking.join(log.facts, checked)
    assert (run.check, run.check_ruleset, run.check_source) == ("pass", "0.7.0", "v0.7 in the path")
    assert log.facts.to_dict() == before  # the facts are not changed by the join: a new run
    assert checking.checked_file(gnmt_log).to_dict() == run.to_dict()


def test_importing_the_reader_patches_nothing_and_a_check_leaves_mlperf_logging_as_it_ships(gnmt_log):
    _as_shipped()
    assert checking.checked_file(gnmt_log).check == "pass"
    _as_shipped()
    with official.fast_checker():
        assert mlp_compliance.eval is not None and mlp_compliance.yaml is not yaml
    _as_shipped()


def test_a_v05_success_below_the_target_it_logs_is_dropped_by_the_checking_step(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text("".join([_v05(1000.0, "run_start"), _v05(1000.1, "eval_target", 21.8),
                            _v05(1000.2, "train_epoch", 0), _v05(1610.0, "eval_accuracy", {"epoch": 0, "value": 20.1}),
                            _v05(1620.0, "run_stop", {"success": True}), _v05(1620.1, "run_final")]))
    assert parse_file(log).problems == []  # the log says success and 20.1: what it says, unjudged
    run = checking.checked_file(log)
    assert run.problems[0] == ("success, but its last evaluation (20.1) is below the eval_target it logs (21.8): "
                               "not a converged run")
    assert not run.scorable


def test_a_round_without_rcps_keeps_the_log_s_fractional_epochs_and_later_rounds_take_the_rcp_reading(tmp_path):
    """The RCP checker rounds epoch_num to 3 places; v0.6 and v0.7 had no RCPs: their figure is the log's."""
    from tests.results.roundlogs import retinanet_log

    text = retinanet_log([0.3, 0.345], epoch_ms=60_000).replace('"epoch_num": 2}', '"epoch_num": 1.87654}')
    figures = {}
    for round_ in ("v0.7", "v1.0"):
        log = tmp_path / f"training_results_{round_}" / "Org" / "results" / "sys" / "ssd" / "result_0.txt"
        log.parent.mkdir(parents=True)
        log.write_text(text)
        run = checking.checked_file(log)
        figures[round_] = (run.epochs_to_converge, run.epoch_unit)
    assert figures == {"v0.7": (1.87654, "epochs"), "v1.0": (1.877, "epochs")}
