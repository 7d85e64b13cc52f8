"""MLPerf's availability categories from the status a system description writes, freely before 4.0.

Published logs copied out of their round's folder are read with the rules of their round, from the log
itself (harness.results.read.submission: its dates, its keys), as they are in place: each run's verdict, minutes
and convergence equal mlperf-logging's own compliance checker, summarizer and RCP checker run on the
original folder with its round's ruleset, and so does the score. End-to-end by necessity (the official
tools on 45 real logs): about 10 s."""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import pytest

from harness.check import check_log
from harness.results.analysis.collect import build
from harness.results.read import submission
from harness.results.read.submission import window_of
from tests.helpers import REPO


@pytest.mark.parametrize("status,category", [
    ("onprem", submission.ON_PREMISE), ("Available on premise", submission.ON_PREMISE),
    ("available", submission.ON_PREMISE), ("Available on-premise", submission.ON_PREMISE),
    ("cloud", submission.CLOUD), ("Available in cloud", submission.CLOUD),
    ("preview", submission.PREVIEW), ("Research, Development, or Internal (RDI)", submission.RDI),
    ("research", submission.RDI), ("", submission.UNKNOWN), (None, submission.UNKNOWN),
    ("beta", "beta"),  # no category's words: kept as written
])
def test_each_status_reads_into_mlperf_s_category(status, category):
    assert submission.category(status) == category


def test_the_listing_names_the_description_s_submitter_else_the_folder(tmp_path):
    org = tmp_path / "NVIDIA"
    (org / "results" / "cw_n8" / "bert").mkdir(parents=True)
    (org / "results" / "plain" / "bert").mkdir(parents=True)
    (org / "systems").mkdir()
    (org / "systems" / "cw_n8.json").write_text(json.dumps({"submitter": "NVIDIA+CoreWeave", "status": "cloud",
                                                            "system_name": "cw"}))
    found = submission.listing(str(org / "results" / "cw_n8" / "bert"))
    assert (found.submitter, found.availability, found.status, found.system_name) == \
        ("NVIDIA+CoreWeave", submission.CLOUD, "cloud", "cw")
    plain = submission.listing(str(org / "results" / "plain" / "bert"))
    assert (plain.submitter, plain.availability) == ("NVIDIA", submission.UNKNOWN)


_spec = importlib.util.spec_from_file_location("official_compare", REPO / "scripts" / "tools" / "official_compare.py")
compare = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compare
_spec.loader.exec_module(compare)

FOLDERS = ["v0.7/NVIDIA/results/dgx1_ngc20.06_pytorch/gnmt", "v2.1/NVIDIA/results/dgxa100_ngc22.04_mxnet/resnet",
           "v3.0/NVIDIA/results/dgxh100_ngc23.04_pytorch/ssd",
           "v4.0/NVIDIA/results/eos_n8_ngc24.04_nemo/stable_diffusion"]


@pytest.mark.parametrize("where", FOLDERS)
def test_logs_out_of_their_round_s_folder_score_as_the_official_tools_score_them_in_place(trees_dir, tmp_path, where):
    folder = trees_dir / where
    round_ = where.split("/")[0]
    logs = sorted(folder.glob("result_*.txt"))
    official = compare.Folder(str(folder), round_, compare.ruleset_of_round(round_), folder.name, [str(p) for p in logs])
    compare.official_side(official)  # mlperf-logging's own tools, with the round's ruleset, in place
    copies = tmp_path / "loose" / folder.name
    copies.mkdir(parents=True)
    for log in logs:
        shutil.copyfile(log, copies / log.name)
    report = build([str(copies)])
    runs = {r.path.rsplit("/", 1)[-1]: r for r in report.runs}
    assert sorted(runs) == [p.name for p in logs]
    for log in logs:
        run, off = runs[log.name], official.official[str(log)]
        assert run.check == off["check"], log.name
        assert run.counted == ("minutes" in off) and run.time_to_train_min == off.get("minutes", run.time_to_train_min)
        assert run.epochs_to_converge == off["convergence"], log.name
        assert run.check_source.startswith("no round in the path: its dates fall in v"), run.check_source
    (score,) = report.scores.values()  # outside the tree no scaling.json: the olympic mean alone
    assert score.minutes is not None and score.minutes * official.scaling == pytest.approx(official.score, rel=1e-12)


def test_the_evidence_is_named_and_ruleset_still_decides(trees_dir, tmp_path):
    ssd = trees_dir / "v3.0/NVIDIA/results/dgxh100_ngc23.04_pytorch/ssd/result_0.txt"  # RetinaNet, as ssd
    loose = tmp_path / "result_0.txt"
    shutil.copyfile(ssd, loose)
    result = check_log(loose)  # it used to be held to 4.1.0, the newest ruleset with an ssd
    assert (result.status, result.ruleset) == ("pass", "3.0.0")
    assert result.source == ("no round in the path: its dates fall in v3.0's window (2022-11-09 to 2023-06-27) "
                             "and 3.0.0's rules pass it")
    forced = check_log(loose, "4.1.0")
    assert (forced.ruleset, forced.source) == ("4.1.0", "--ruleset")
    assert window_of(1593019143723) == ("v0.7", "2019-07-10", "2020-07-29") and window_of(None) is None


def test_keys_choose_where_the_dates_cannot(tmp_path):
    """RetinaNet under its own name exists from 5.0.0 on: a run dated in v4.0's window (when it was still
    called ssd) is placed by the rulesets whose rules pass it; a run after every known window, likewise."""
    from tests.results.roundlogs import retinanet_log

    dated = tmp_path / "result_0.txt"
    dated.write_text(retinanet_log([0.3, 0.345], benchmark="retinanet"))  # 2023-11-14: v4.0's window
    result = check_log(dated)
    assert result.status == "pass" and result.ruleset == "5.0.0", result.source
    assert result.source.startswith("no round in the path: its keys pass the rules of 5.0.0, 5.1.0")
    assert result.source.endswith("; 5.0.0 is the nearest to 4.0.0, the round of its dates")
    late = tmp_path / "late" / "result_0.txt"
    late.parent.mkdir()
    late.write_text(retinanet_log([0.3, 0.345], benchmark="retinanet", t0=1_900_000_000_000))  # 2030
    newest = check_log(late)
    assert newest.status == "pass" and newest.source.endswith(f"; {newest.ruleset} is the newest"), newest.source


def test_a_folder_naming_a_round_mlperf_logging_does_not_know_says_which_and_which_it_knows(tmp_path):
    from tests.results.roundlogs import retinanet_log

    log = tmp_path / "training_results_v8.3" / "Org" / "results" / "sys" / "ssd" / "result_0.txt"
    log.parent.mkdir(parents=True)
    log.write_text(retinanet_log([0.3, 0.345]))
    result = check_log(log)
    assert result.source.startswith("v8.3 in the path is not a round mlperf_logging has rules for (it has v0.6, v0.7, ")
    assert "no round in the path" not in result.source
