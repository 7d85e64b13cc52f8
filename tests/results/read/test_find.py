"""Which files the report and the checker read under a folder: links to run folders followed, a loop
named and not followed, and a folder or a pipe with a log's name named instead of read (or hung on)."""
from __future__ import annotations

import os

from harness.results.read.find import NESTED, NOT_A_FILE, find_logs
from tests.helpers import run_cli


def _log(fixtures_dir) -> bytes:
    return (fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt").read_bytes()


def test_a_linked_run_folder_is_read_once_and_a_loop_is_named(fixtures_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "run1"
    elsewhere.mkdir(parents=True)
    (elsewhere / "result_0.txt").write_bytes(_log(fixtures_dir))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "run1").symlink_to(elsewhere, target_is_directory=True)
    (tree / "again").symlink_to(elsewhere, target_is_directory=True)  # a second way to the same run
    (tree / "up").symlink_to(tree, target_is_directory=True)
    logs, orphans, problems = find_logs([str(tree)])
    assert [p.name for p in logs] == ["result_0.txt"] and len(logs) == 1 and orphans == []
    assert problems == [(str(tree / "up"), f"a link back to {tree}, a folder it lies in (a loop): not followed")]
    out = run_cli("harness.report", str(tree), "--json", "-")
    assert out.returncode == 1 and f"{tree / 'up'}: a link back to" in out.stderr and "Traceback" not in out.stderr
    assert '"benchmark": "gnmt"' in out.stdout  # the linked run is in the report


def test_a_folder_named_mlperf_log_is_one_line_and_exit_1(tmp_path):
    (tmp_path / "run" / "mlperf.log").mkdir(parents=True)
    out = run_cli("harness.report", str(tmp_path / "run"))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.splitlines() == [f"{tmp_path / 'run' / 'mlperf.log'}: {NOT_A_FILE}"]
    check = run_cli("harness.check", str(tmp_path / "run"))
    assert check.returncode == 2 and f"{tmp_path / 'run' / 'mlperf.log'}: {NOT_A_FILE}" in check.stderr


def test_a_pipe_with_a_log_s_name_is_named_not_read(tmp_path):
    os.mkfifo(tmp_path / "result_0.txt")  # reading it would block forever
    assert find_logs([str(tmp_path)]) == ([], [], [(str(tmp_path / "result_0.txt"), NOT_A_FILE)])
    assert find_logs([str(tmp_path / "result_0.txt")]) == ([], [], [(str(tmp_path / "result_0.txt"), NOT_A_FILE)])


def test_a_log_linked_to_itself_is_named_in_one_line_by_the_report_and_the_check(tmp_path, capsys):
    from harness.check.__main__ import main as check
    from harness.report import main as report

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "mlperf.log").symlink_to("mlperf.log")  # a loop: resolve() raises on it
    for path, why in ((tmp_path, NOT_A_FILE), (tmp_path / "run" / "mlperf.log", "a link that leads to no file")):
        assert report([str(path)]) == 1
        out = capsys.readouterr()
        assert out.out == "" and len(out.err.splitlines()) == 1 and why in out.err
        assert check([str(path)]) == 2
        assert why in capsys.readouterr().err


def test_a_folder_and_a_link_to_it_both_named_count_each_run_once(fixtures_dir, tmp_path):
    runs = tmp_path / "runs" / "sys"
    runs.mkdir(parents=True)
    for i in range(3):
        (runs / f"result_{i}.txt").write_bytes(_log(fixtures_dir))
    (runs.parent / "orphan").mkdir()
    (runs.parent / "orphan" / "result.json").write_text("{}")
    (tmp_path / "alias").symlink_to(tmp_path / "runs", target_is_directory=True)
    logs, orphans, problems = find_logs([str(tmp_path / "runs"), str(tmp_path / "alias"), str(runs / "result_1.txt")])
    assert [p.name for p in logs] == ["result_0.txt", "result_1.txt", "result_2.txt"] and len(orphans) == 1
    assert problems == []


def test_a_log_over_the_report_s_size_limit_is_one_line_and_the_others_are_read(fixtures_dir, tmp_path):
    from harness.results.analysis.collect import build

    small = _log(fixtures_dir)
    (tmp_path / "result_0.txt").write_bytes(small)
    (tmp_path / "result_1.txt").write_bytes(small + b"framework chatter\n" * 120_000)  # over 2 MiB
    report = build([str(tmp_path)], jobs=1, max_log_bytes=1 << 20)
    assert [r.path.rsplit("/", 1)[1] for r in report.runs] == ["result_0.txt"]
    ((path, why),) = report.errors
    assert path.endswith("result_1.txt") and why.startswith("2 MiB, over the limit of 1 MiB a log: not read")


def test_a_copy_of_runs_inside_a_benchmark_folder_is_named_once_and_not_read(tmp_path):
    # Habana's v1.0 tree holds its BERT logs a second time under results/SYS-420GH-TNGR/resnet/bert/: the
    # summarizer reads results/*/*/result_*.txt and never sees them; read, they were a scored system of their own
    system = tmp_path / "Habana" / "results" / "SYS-420GH-TNGR"
    for folder in (system / "resnet", system / "bert", system / "resnet" / "bert"):
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (folder / f"result_{i}.txt").write_text(":::MLLOG {}\n")
    logs, _, problems = find_logs([str(tmp_path)])
    assert sorted(p.parent.name for p in logs) == ["bert"] * 3 + ["resnet"] * 3
    assert all(p.parent.parent.name == "SYS-420GH-TNGR" for p in logs)
    assert problems == [(str(system / "resnet" / "bert"), f"3 {NESTED}")]
    named, _, problems = find_logs([str(system / "resnet" / "bert")])  # named itself, it is read
    assert len(named) == 3 and problems == []
