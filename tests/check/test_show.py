"""`python -m harness.check.show`: the pieces the report and the checker read, each printed alone from a real
submission tree; a file it cannot read is named in one line and the others are still shown."""
from __future__ import annotations

import ast
import json

from tests.helpers import REPO, run_cli

GNMT = "v0.7/NVIDIA/results/dgx1_ngc20.06_pytorch/gnmt/result_0.txt"


def test_a_log_its_format_and_its_system_as_the_report_reads_them(trees_dir, tmp_path):
    log = str(trees_dir / GNMT)
    said = run_cli("harness.check.show", "log", log, str(tmp_path / "missing.txt"), cwd=tmp_path)
    assert said.returncode == 1
    (line,) = said.stdout.splitlines()
    run = json.loads(line)
    assert (run["benchmark"], run["world_size"], run["global_batch_size"]) == ("gnmt", 8, 2048)
    assert said.stderr.strip() == f"{tmp_path / 'missing.txt'}: cannot read: No such file or directory"
    form = run_cli("harness.check.show", "format", log, cwd=tmp_path)
    assert form.returncode == 0 and form.stdout.startswith(f"{log}: MLLOG (v0.7+), 62 records\n")
    assert "  line 10: submission_benchmark = 'gnmt'" in form.stdout
    system = run_cli("harness.check.show", "system", log, cwd=tmp_path)
    assert "world_size=8, accelerator='NVIDIA V100-SXM2-16GB (300W)'" in system.stdout
    checked = run_cli("harness.check.show", "checked", log, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    verdict = json.loads(checked.stdout)
    assert (verdict["check"], verdict["check_ruleset"], verdict["check_source"]) == ("pass", "0.7.0", "v0.7 in the path")


def test_each_piece_names_a_path_that_is_not_there_in_one_line_and_exits_1(tmp_path):
    for what, kind in (("system", "file"), ("submitters", "folder"), ("throughput", "folder"), ("rules", "file")):
        said = run_cli("harness.check.show", what, str(tmp_path / "nope"), cwd=tmp_path)
        assert said.returncode == 1 and said.stdout == "", what
        assert said.stderr.strip() == f"{tmp_path / 'nope'}: no such {kind}", what


def test_a_benchmark_s_target_and_a_bad_choice_in_one_line(tmp_path):
    said = run_cli("harness.check.show", "targets", "gnmt", cwd=tmp_path)
    assert said.returncode == 0 and said.stdout.startswith("gnmt: BLEU; rules 0.7.0 (training_0.7.0/common.yaml); 0.24")
    bad = run_cli("harness.check.show", "bleu", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'bleu'" in bad.stderr.splitlines()[-1]


def test_only_the_commands_run_as_scripts():
    """What a module printed when run alone is a piece of harness.check.show: the harness's modules that run
    as scripts are its commands and the bench's cell starter."""
    scripts = set()
    for path in (REPO / "harness").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                scripts.add(str(path.relative_to(REPO)))
    assert scripts == {"harness/train.py", "harness/sweep.py", "harness/report.py", "harness/check_data.py",
                       "harness/check/__main__.py", "harness/check/show.py", "harness/bench/start.py"}


def test_a_round_or_organisation_folder_lists_its_benchmark_folders_and_a_reader_may_stop_early(trees_dir, tmp_path):
    # an organisation's folder printed Listing(submitter='?', ...) and exit 0; `| head` gave BrokenPipeError's traceback
    said = run_cli("harness.check.show", "submitters", str(trees_dir / "v0.7" / "NVIDIA"), cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    lines = said.stdout.splitlines()
    assert len(lines) == 3 and all("/results/" in line and line.rstrip().endswith(")") and "submitter='NVIDIA'" in line
                                   for line in lines), said.stdout
    empty = run_cli("harness.check.show", "submitters", str(tmp_path), cwd=tmp_path)
    assert empty.returncode == 1 and "no benchmark folder" in empty.stderr
    import subprocess
    import sys

    from tests.helpers import child_env

    logs = [str(trees_dir / GNMT)] * 200
    proc = subprocess.Popen([sys.executable, "-m", "harness.check.show", "log", *logs], cwd=REPO, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()  # the reader has what it wanted
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err, err
    helped = run_cli("harness.check.show", "--help", cwd=tmp_path)
    assert "harness.report, harness.check and harness.train build on" in " ".join(helped.stdout.split())
