"""The log parser reads real MLPerf logs to the official numbers and names every malformed input."""
from __future__ import annotations

import json

import pytest

from harness.results.read.parse import LogError, parse_file, parse_lines
from harness.results.read.checking import checked_file

# mlperf-logging 4.1.68's result_summarizer and RCP checker on these files (fixtures README)
OFFICIAL_MINUTES = {
    "gnmt": [18.51675, 18.54296666666667, 18.472133333333336, 18.463283333333333, 18.466766666666665,
             23.234016666666665, 18.621266666666667, 18.32421666666667, 18.46666666666667, 18.46525],
    "transformer": [17.836066666666667, 17.85205, 17.967883333333337, 24.0185, 17.975150000000003,
                    17.963416666666667, 23.9582, 17.996216666666665, 18.1049, 18.677349999999997],
}
OFFICIAL_EPOCHS = {"gnmt": [4, 4, 4, 4, 4, 5, 4, 4, 4, 4], "transformer": [3, 3, 3, 4, 3, 3, 4, 3, 3, 3]}


@pytest.mark.parametrize("benchmark", ["gnmt", "transformer"])
def test_reads_nvidia_logs_to_official_minutes_and_epochs(fixtures_dir, benchmark):
    for i, (minutes, epochs) in enumerate(zip(OFFICIAL_MINUTES[benchmark], OFFICIAL_EPOCHS[benchmark])):
        run = checked_file(fixtures_dir / "nvidia_dgx1" / benchmark / f"result_{i}.txt")
        assert run.benchmark == benchmark
        assert run.status == "success"
        assert run.time_to_train_min == pytest.approx(minutes, abs=1e-6)
        assert run.epochs_to_converge == epochs
        assert run.scorable, run.problems


def test_seconds_based_logs_are_read_but_flagged_not_scorable(fixtures_dir):
    runs = [checked_file(p) for p in sorted((fixtures_dir / "alibaba_v100-1280" / "resnet").glob("result_*.txt"))]
    assert len(runs) == 5
    for run in runs:
        assert run.timestamp_unit == "s"
        assert not run.scorable
        assert any("time_s" in p and "0.7.0" in p for p in run.problems)
        assert 1.6 < run.time_to_train_min < 1.8  # read from the seconds, not guessed
    statuses = {run.path.rsplit("/", 1)[-1]: run.status for run in runs}
    assert statuses["result_1.txt"] == "aborted"
    assert runs[0].epochs_to_converge is None


T0 = 1_600_000_000_000  # 2020-09-13 in milliseconds: a log's times are relative to it, on a round's calendar


def _line(key, value=None, t=1000, event="POINT_IN_TIME", **meta):
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": T0 + t, "event_type": event, "key": key,
                                     "value": value, "metadata": {"file": "x.py", "lineno": 1, **meta}}) + "\n"


def _good_run(t0=1000):
    return [
        _line("submission_benchmark", "ncf", t0), _line("submission_platform", "1xCPU", t0),
        _line("seed", 7, t0), _line("init_start", t=t0, event="INTERVAL_START"),
        _line("init_stop", t=t0 + 500, event="INTERVAL_END"),
        _line("run_start", t=t0 + 1000, event="INTERVAL_START"),
        _line("tracked_stats", {"samples": 1000, "seconds": 2.0}, t0 + 2000, epoch_num=1),
        _line("eval_accuracy", 0.5, t0 + 2000, epoch_num=1),
        _line("tracked_stats", {"samples": 3000, "seconds": 2.0}, t0 + 4000, epoch_num=2),
        _line("eval_accuracy", 0.7, t0 + 4000, epoch_num=2),
        _line("run_stop", t=t0 + 61000, event="INTERVAL_END", status="success"),
    ]


def test_a_clean_log_gives_mlperf_definitions():
    run = parse_lines(["noise before the log\n", "[rank 0] " + _good_run()[0], *_good_run()[1:]])
    assert run.scorable, run.problems
    assert run.time_to_train_s == 60.0 and run.time_to_train_min == 1.0
    assert run.init_time_s == 0.5
    assert run.epochs_to_converge == 2
    assert run.seed == 7
    assert run.throughput == 1000.0  # 4000 samples over 4 counted seconds


def test_bad_json_line_is_named_and_the_rest_is_read():
    lines = _good_run()
    lines.insert(3, ':::MLLOG {"key": "seed", "value": \n')
    run = parse_lines(lines)
    assert not run.scorable
    assert run.problems == ["1 line(s) are not valid MLLOG JSON (first at line 4)"]
    assert run.time_to_train_s == 60.0


def test_missing_run_stop_is_incomplete():
    run = parse_lines(_good_run()[:-1])
    assert run.status == "incomplete"
    assert run.time_to_train_s is None
    assert any("no run_stop" in p for p in run.problems)


def test_two_runs_in_one_file_is_refused_with_line_numbers():
    with pytest.raises(LogError, match=r"holds 2 runs \(run_start at lines 6, 17\).*split it"):
        parse_lines(_good_run() + _good_run(100_000))


def test_empty_file_is_refused(tmp_path):
    empty = tmp_path / "result_0.txt"
    empty.write_text("")
    with pytest.raises(LogError, match="no :::MLLOG lines"):
        parse_file(empty)


def test_aborted_run_has_no_epochs_to_converge():
    lines = _good_run()
    lines[-1] = _line("run_stop", t=62000, event="INTERVAL_END", status="aborted")
    run = parse_lines(lines)
    assert run.status == "aborted" and run.epochs_to_converge is None and run.scorable


BAD_TYPES = {"submission_benchmark": ["ncf"], "submission_platform": {"a": 1}, "submission_org": 3,
             "precision": True, "seed": [7], "global_batch_size": "many"}


def test_a_name_or_count_of_the_wrong_json_type_is_one_line_and_the_other_runs_are_reported(tmp_path, capsys):
    """A list as the platform reached the groups' keys (unhashable: every run lost to a traceback)."""
    from harness.report import main as report

    def write(name: str, key: str | None = None, value: object = None) -> None:
        lines = [_line("global_batch_size", 2048, 1000), _line("submission_org", "Org", 1000),
                 _line("precision", "fp32", 1000), *_good_run()]
        if key is not None:
            lines = [_line(key, value, 1000) if f'"key": "{key}"' in l else l for l in lines]
        (tmp_path / name).mkdir()
        (tmp_path / name / "mlperf.log").write_text("".join(lines))

    for seed in (1, 2, 3):
        write(f"good{seed}", "seed", seed)
    for key, value in BAD_TYPES.items():
        write(key, key, value)
    write("float_batch", "global_batch_size", 2048.0)  # an integer written as a float: read as one, with a warning
    assert report([str(tmp_path), "--json", "-"]) == 1
    out = capsys.readouterr()
    runs = {r["path"].split("/")[-2]: r for r in json.loads(out.out)["runs"]}
    assert len(runs) == 3 + len(BAD_TYPES) + 1 and "Traceback" not in out.err
    for key in BAD_TYPES:
        said = [l for l in out.err.splitlines() if f"/{key}/mlperf.log" in l]
        assert len(said) == 1 and f"{key} is " in said[0] and "not read" in said[0], said
        assert runs[key]["problems"] == [said[0].split("mlperf.log: ", 1)[1]]
    assert runs["float_batch"]["global_batch_size"] == 2048 and runs["float_batch"]["scorable"]
    assert all(runs[f"good{s}"]["scorable"] for s in (1, 2, 3))
