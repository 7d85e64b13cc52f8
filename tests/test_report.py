"""`python -m harness.report` as a user runs it: tables, JSON, CSV, and bad files named."""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile

import pytest

from tests.helpers import fill_disk, run_cli
from tests.results.read.test_parse import _good_run


def test_report_on_the_official_fixtures(fixtures_dir):
    out = run_cli("harness.report", str(fixtures_dir), "--json", "-")
    report = json.loads(out.stdout)
    assert report["schema"] == "harness.report/4"
    groups = {g["benchmark"]: g for g in report["groups"]}
    assert groups["gnmt"]["score"]["minutes"] == 18.501885416666664
    assert groups["transformer"]["score"]["minutes"] == 18.811895833333335
    assert groups["transformer"]["epochs"]["counts"] == {"3": 8, "4": 2}
    assert groups["resnet"]["score"]["minutes"] is None and "cannot be scored" in groups["resnet"]["score"]["note"]
    # the seconds-based alibaba logs are named on stderr and make the exit status 1
    assert out.returncode == 1
    assert out.stderr.count("alibaba_v100-1280/resnet/result_") == 5
    assert "time_s" in out.stderr


def test_text_table_lists_runs_and_scores(fixtures_dir):
    out = run_cli("harness.report", str(fixtures_dir / "nvidia_dgx1"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2].split()[:6] == ["benchmark", "status", "ttt_s", "ttt_min", "epochs", "throughput/s"]
    gnmt5 = next(line for line in lines if line.rstrip().endswith("gnmt/result_5.txt"))
    assert gnmt5.split()[1:5] == ["success", "1394.0", "23.2340", "5"]
    score = next(line for line in lines if line.startswith("gnmt") and "1xNVIDIA DGX-1" in line)
    assert "18.5019" in score and "10/10 yes" in score and "4:9 5:1" in score


def test_each_bad_file_is_named_and_the_others_still_reported(tmp_path):
    good = tmp_path / "good" / "mlperf.log"
    good.parent.mkdir()
    good.write_text("".join(_good_run()))
    (tmp_path / "result_empty.txt").write_text("")
    (tmp_path / "result_two.txt").write_text("".join(_good_run() + _good_run(100_000)))
    (tmp_path / "result_badjson.txt").write_text("".join(_good_run()[:3] + [":::MLLOG {oops\n"] + _good_run()[3:]))
    (tmp_path / "result_nostop.txt").write_text("".join(_good_run()[:-1]))
    secs = [l.replace('"time_ms": ', '"time_s": ') for l in _good_run()]
    (tmp_path / "result_secs.txt").write_text("".join(secs))

    out = run_cli("harness.report", str(tmp_path), "--csv", "-")
    assert out.returncode == 1
    err = out.stderr.splitlines()
    assert any("result_empty.txt: no :::MLLOG lines" in l for l in err)
    assert any("result_two.txt: holds 2 runs" in l for l in err)
    assert any("result_badjson.txt: 1 line(s) are not valid MLLOG JSON (first at line 4)" in l for l in err)
    assert any("result_nostop.txt: no run_stop" in l for l in err)
    assert any("result_secs.txt: timestamps are seconds" in l for l in err)
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in csv.DictReader(io.StringIO(out.stdout)) if r["kind"] == "run"}
    assert set(rows) == {"mlperf.log", "result_badjson.txt", "result_nostop.txt", "result_secs.txt"}
    assert rows["mlperf.log"]["scorable"] == "True" and float(rows["mlperf.log"]["time_to_train_s"]) == 60.0
    assert rows["result_nostop.txt"]["status"] == "incomplete"


def test_missing_path_is_an_error(tmp_path):
    out = run_cli("harness.report", str(tmp_path / "nope"))
    assert out.returncode == 1 and "no such file or folder" in out.stderr


def test_gpu_model_energy_and_power_come_from_the_run_directory(tmp_path):
    from tests.results.analysis.test_speedups import write_run

    for seed, energy in ((1, 90_000.0), (2, 110_000.0), (3, 100_000.0)):
        run_dir = tmp_path / f"s{seed}"
        write_run(run_dir / "mlperf.log", 1, seed, 3, 1000.0, platform="NVIDIA H200")
        (run_dir / "result.json").write_text(json.dumps({
            "accelerator": "NVIDIA H200",
            "telemetry": {"source": "nvml", "energy_j": energy, "power_mean_w": 600.0 + seed}}))
    bare = tmp_path / "official" / "result_0.txt"  # an official log beside them: n/a, not an error
    write_run(bare, 1, 9, 3, 1000.0, platform="NVIDIA H200")
    out = run_cli("harness.report", str(tmp_path), "--json", "-")
    runs = {r["seed"]: r for r in json.loads(out.stdout)["runs"]}
    assert runs[1]["accelerator"] == "NVIDIA H200" and runs[1]["energy_j"] == 90_000.0
    assert runs[9]["energy_j"] is None and runs[9]["accelerator"] is None
    # the accelerator is part of the group key: the bare log, which names none, is a group of its own
    groups = {g["accelerator"]: g for g in json.loads(out.stdout)["groups"]}
    assert set(groups) == {"NVIDIA H200", None}
    group = groups["NVIDIA H200"]
    assert group["energy_j"]["mean"] == 100_000.0 and group["accelerators"] == ["NVIDIA H200"]
    text = run_cli("harness.report", str(tmp_path)).stdout
    header = text.splitlines()[2].split()
    assert header[9:12] == ["gpu", "energy_kJ", "power_W"]
    row = next(l for l in text.splitlines() if "s1/mlperf.log" in l).split()
    assert row[9:12] == ["NVIDIA", "H200", "90"]
    assert "energy_kJ mean (std)" in text and "100 (8.2)" in text


def _report(capsys, *args: str) -> str:
    """The report's stdout, run in this process (the CLI itself is run as a user runs it elsewhere)."""
    from harness.report import main

    capsys.readouterr()
    main(list(args))
    return capsys.readouterr().out


def _harness_run(run_dir, seed, qualities, target, direction="higher", metric="acc", busy=False, status="success"):
    """A harness run directory: mlperf.log with one evaluation per epoch, and its result.json."""
    from tests.results.read.test_parse import _line

    t0 = 1_600_000_000_000
    lines = [_line("submission_benchmark", "twopart", t0), _line("submission_platform", "1xCPU", t0),
             _line("number_of_nodes", 1, t0), _line("accelerators_per_node", 1, t0), _line("seed", seed, t0),
             _line("global_batch_size", 64, t0), _line("init_start", t=t0, event="INTERVAL_START"),
             _line("init_stop", t=t0 + 100, event="INTERVAL_END"), _line("run_start", t=t0 + 100, event="INTERVAL_START")]
    for e, q in enumerate(qualities, start=1):
        lines.append(_line("tracked_stats", {"samples": 1000, "seconds": 1.0}, t0 + 100 + 1000 * e, epoch_num=e))
        lines.append(_line("eval_accuracy", q, t0 + 100 + 1000 * e, epoch_num=e))
    lines.append(_line("run_stop", t=t0 + 200 + 1000 * len(qualities), event="INTERVAL_END", status=status))
    run_dir.mkdir(parents=True)
    (run_dir / "mlperf.log").write_text("".join(lines))
    load = {"cpus": 2, "busy": busy, "note": "another process used 0.95 of 2 CPUs during the run" if busy else None}
    (run_dir / "result.json").write_text(json.dumps({
        "accelerator": "CPU", "quality_metric": metric, "quality_direction": direction, "target": target,
        "epoch_unit": "epochs", "throughput_unit": "samples/s", "host_load": load}))


def test_a_quality_of_named_parts_reads_in_every_output(tmp_path, capsys):
    """Issue 13: eval_accuracy may be {"BBOX": .., "SEGM": ..}; tables, JSON, CSV and plots handle it."""
    for seed in (1, 2, 3):
        _harness_run(tmp_path / f"s{seed}", seed, [{"A": 0.80, "B": 0.70}, {"A": 0.95, "B": 0.9 + seed / 100}],
                     {"A": 0.9, "B": 0.85})
    out = run_cli("harness.report", str(tmp_path), "--plots", str(tmp_path / "plots"))
    assert out.returncode == 0, out.stderr
    row = next(l for l in out.stdout.splitlines() if "s2/mlperf.log" in l)
    assert "A=0.95 B=0.92" in row and row.split()[4] == "2"  # epochs to converge
    data = json.loads(_report(capsys, str(tmp_path), "--json", "-"))
    assert {r["seed"]: r["final_quality"] for r in data["runs"]}[3] == {"A": 0.95, "B": 0.93}
    assert data["runs"][0]["target"] == {"A": 0.9, "B": 0.85} and data["warnings"] == []
    rows = list(csv.DictReader(io.StringIO(_report(capsys, str(tmp_path), "--csv", "-"))))
    assert rows[0]["final_quality"] == "A=0.95 B=0.91"
    assert (tmp_path / "plots" / "quality.png").is_file()


def test_a_lower_is_better_metric_compares_the_other_way(tmp_path, capsys):
    _harness_run(tmp_path / "ok", 1, [3.1, 2.6], 2.69, direction="lower", metric="log perplexity")
    _harness_run(tmp_path / "bad", 2, [3.1, 2.8], 2.69, direction="lower", metric="log perplexity")
    report = json.loads(_report(capsys, str(tmp_path), "--json", "-"))
    (warning,) = report["warnings"]
    assert "bad/mlperf.log: status success, but its last evaluation (log perplexity 2.8000) does not reach the " \
           "target (<= 2.69)" in warning


def test_a_run_on_a_busy_machine_is_marked_listed_and_still_scored(tmp_path, capsys):
    """Issue 14 item 3: result.json's host_load.busy marks the run; its time still counts."""
    for seed in (1, 2, 3):
        _harness_run(tmp_path / f"s{seed}", seed, [0.5, 0.95], 0.9, busy=seed == 2)
    out = run_cli("harness.report", str(tmp_path))
    assert out.returncode == 0, out.stderr
    row = next(l for l in out.stdout.splitlines() if "s2/mlperf.log" in l)
    assert row.split()[1] == "success!"
    assert "! the machine was busy" in out.stdout and "1 of 3 run(s) ran on a busy machine" in out.stdout
    assert "s2/mlperf.log: warning: busy machine: another process used 0.95 of 2 CPUs" in out.stderr
    (group,) = json.loads(_report(capsys, str(tmp_path), "--json", "-"))["groups"]
    assert group["busy"] == 1 and group["score"]["minutes"] is not None


def test_two_runs_with_one_seed_are_warned_about(tmp_path, capsys):
    """Issue 14 item 17: the report counted two runs of the same seed in one group without a word."""
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        _harness_run(tmp_path / name, seed, [0.5, 0.95], 0.9)
    out = run_cli("harness.report", str(tmp_path))
    assert "seed 1 was used by 2 runs" in out.stdout and "warning: twopart" in out.stderr
    (group,) = json.loads(_report(capsys, str(tmp_path), "--json", "-"))["groups"]
    assert group["repeated_seeds"] == {"1": 2}


def test_plots_name_the_metric_and_order_seeds_as_numbers(tmp_path, monkeypatch):
    """Issue 14 item 17: the quality axis said eval_accuracy; time-to-train bars sorted seeds as strings."""
    from harness.results.report import plots
    from harness.results.analysis.collect import build, label_for, target_for

    for seed in (10, 2, 1):
        _harness_run(tmp_path / f"s{seed}", seed, [0.5, 0.95], 0.9, metric="HR@10")
    seen = {}

    def save(fig, path, plt):
        ax = fig.axes[0]
        seen[path.name] = (ax.get_ylabel(), [t.get_text() for t in ax.get_xticklabels()])
        plt.close(fig)
        return path

    monkeypatch.setattr(plots, "_save", save)
    report = build([str(tmp_path)])
    plots.plot_all(report.groups, report.speedups, tmp_path / "plots", target_for, label_for(report))
    assert seen["quality.png"][0] == "HR@10"
    assert seen["time_to_train.png"][1] == ["1", "2", "10"]
    # a registered model names its own metric; any other benchmark gets MLPerf's name for it
    assert label_for(report)("gnmt") == "BLEU" and label_for(report)("resnet") == "top-1"
    assert label_for(report)("dlrm") == "AUC" and label_for(report)("minigo") == "win rate"


@pytest.mark.e2e
def test_a_throughput_only_model_appears_in_the_report_s_throughput_table(tmp_path):
    """Issue 13: a registered throughput-only stand-in runs mode=throughput and is reported."""
    env = {"HARNESS_MODELS": "tests.models.tputonly"}
    for precision in ("fp32", "bf16"):
        out = run_cli("harness.train", "model=tputonly", "mode=throughput", f"precision={precision}", "device=cpu",
                      "warmup_steps=1", "throughput_steps=2", "throughput_repeats=2", "output_root=out",
                      "progress=false", cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
    report = run_cli("harness.report", str(tmp_path / "out"), env=env)
    assert report.returncode == 0, report.stderr
    table = report.stdout.split("Throughput (mode=throughput)")[1]
    assert "tputonly  tputonly  CPU          bf16" in table and "tputonly  tputonly  CPU          fp32" in table
    assert "Precision against the baseline" in table


@pytest.mark.parametrize("flag", ["--md", "--json", "--csv", "--html"])
def test_a_report_file_the_disk_cannot_hold_is_one_line_and_leaves_the_old_file_whole(fixtures_dir, tmp_path,
                                                                                       monkeypatch, capsys, flag):
    from harness import report

    out = tmp_path / "report.out"
    out.write_text("the report of yesterday\n")
    fill_disk(monkeypatch, room=10)
    rc = report.main([str(fixtures_dir / "nvidia_dgx1" / "gnmt"), flag, str(out)])
    monkeypatch.undo()
    assert rc == 1
    # the page's plots are drawn first, into a temporary folder: that file is the one named then
    written = os.path.join(tempfile.gettempdir(), "report-plots-") if flag == "--html" else f"{out}:"
    (line,) = [l for l in capsys.readouterr().err.splitlines() if not l.startswith("warning:")]
    assert line.startswith(f"harness.report: error: cannot write {written}")
    assert line.endswith(": the disk is full (No space left on device); free space or write the files elsewhere")
    assert out.read_text() == "the report of yesterday\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.out"]  # no 0-byte or temporary file


def test_report_plots_the_disk_cannot_hold_are_one_line_and_no_partial_png(fixtures_dir, tmp_path, monkeypatch, capsys):
    from harness import report

    fill_disk(monkeypatch, room=0)
    rc = report.main([str(fixtures_dir / "nvidia_dgx1"), "--plots", str(tmp_path / "plots")])
    monkeypatch.undo()
    (line,) = [l for l in capsys.readouterr().err.splitlines() if not l.startswith("warning:")]
    assert rc == 1 and line.startswith(f"harness.report: error: cannot write {tmp_path / 'plots'}/")
    assert line.endswith(".png: the disk is full (No space left on device); free space or write the files elsewhere")
    assert list((tmp_path / "plots").iterdir()) == []


def test_an_output_that_is_no_file_or_one_the_report_reads_is_refused_before_anything_is_written(tmp_path):
    _harness_run(tmp_path / "runs" / "a", 1, [0.5, 0.95], 0.9)
    run = tmp_path / "runs" / "a"
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for args, why in [(["--html", str(pipe)], "it is not a regular file"),
                      (["--csv", str(run / "result.json")], "it is one of the files this report reads"),
                      (["--md", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.md")], "--md names the same file"),
                      (["--plots", str(pipe)], "--plots " + str(pipe) + ": it is there and is not a folder")]:
        out = run_cli("harness.report", str(tmp_path / "runs"), *args)
        assert out.returncode == 2 and out.stdout == "", out.stderr
        assert out.stderr.count("\n") == 1 and why in out.stderr and "Traceback" not in out.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before and pipe.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "runs"]
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "report.json")  # a link to a file not there yet: written through
    assert run_cli("harness.report", str(tmp_path / "runs"), "--json", str(link)).returncode == 0
    assert link.is_symlink() and json.loads((tmp_path / "report.json").read_text())["runs"]


def test_runs_that_state_different_targets_are_scored_apart_with_a_note(tmp_path, capsys):
    for seed in (1, 2, 3):
        _harness_run(tmp_path / f"low{seed}", seed, [0.5, 0.8], 0.75)
        _harness_run(tmp_path / f"high{seed}", seed + 3, [0.5, 0.8, 0.95], 0.9)
    from harness.report import main

    assert main([str(tmp_path), "--json", "-"]) == 0
    out = capsys.readouterr()
    groups = json.loads(out.out)["groups"]
    assert sorted((g["target_group"], g["runs"], g["epochs"]["mean"]) for g in groups) == [("0.75", 3, 2.0),
                                                                                        ("0.9", 3, 3.0)]
    assert sum("scored as a group of their own" in line for line in out.err.splitlines()) == 2


def test_two_outputs_to_standard_output_are_refused(fixtures_dir):
    # Markdown then JSON in one stream was neither
    out = run_cli("harness.report", str(fixtures_dir / "nvidia_dgx1"), "--md", "-", "--json", "-")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == ("harness.report: error: --json -: --md writes to standard output already; give the "
                                  "other a file")


def test_a_plots_folder_that_cannot_be_made_is_one_line_naming_it(tmp_path, capsys):
    """mkdir's own error, "[Errno 20] Not a directory: '.../plots'", was the line: now it reads as any file
    the report cannot write does (a read-only folder gave "[Errno 30] Read-only file system: 'p'")."""
    from harness.report import main

    _harness_run(tmp_path / "runs" / "r1", 1, [0.5, 0.9], 0.8)
    (tmp_path / "file").write_text("not a folder\n")
    capsys.readouterr()
    assert main([str(tmp_path / "runs"), "--plots", str(tmp_path / "file" / "plots")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"harness.report: error: cannot write {tmp_path / 'file' / 'plots'}: Not a directory"
