"""A command's console when it is not a UTF-8 terminal: an encoding that lacks a path's characters, a
locale whose file names are not UTF-8, a reader that leaves early (`| head -1`). The run goes on to its
end with its files whole, and no traceback reaches the console."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env, said

TWOPART = {"HARNESS_MODELS": "tests.models.twopart"}
RUN = ["-m", "harness.train", "model=twopart", "seed=1", "progress=false", "output_root=out"]


def _run(cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *RUN], cwd=cwd, env=child_env(**TWOPART, **env), capture_output=True,
                          timeout=180)


def _record(cwd: Path) -> tuple[Path, dict]:
    (path,) = (cwd / "out").rglob("result.json")
    return path.parent, json.loads(path.read_text())


def test_an_ascii_console_gets_a_path_s_other_characters_as_escapes(tmp_path):
    """PYTHONIOENCODING=ascii and a folder named ü: the first line and the last ('run dir: ...') were lost, each
    with a '--- Logging error ---' traceback."""
    cwd = tmp_path / "dir with spaces" / "ünï"
    cwd.mkdir(parents=True)
    done = _run(cwd, PYTHONIOENCODING="ascii")
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")
    assert done.returncode == 0 and "Logging error" not in err and "Traceback" not in err, err
    run_dir, record = _record(cwd)
    assert record["status"] == "success"
    assert f"run dir: {str(run_dir).encode('ascii', 'backslashreplace').decode()}" in out.splitlines()
    assert out.splitlines()[0].startswith("twopart on ") and "\\xfcn\\xef" in out.splitlines()[0]


def test_a_locale_without_utf_8_runs_in_a_folder_named_in_utf_8(tmp_path):
    """LC_ALL=C with UTF-8 mode off (PYTHONUTF8=0): the path's bytes come as surrogates. TensorBoard's writer,
    which names its file in UTF-8, failed the run; train.log, written in the locale's ASCII, lost the lines
    naming the folder, each with a traceback. Now TensorBoard is off with one line saying why and train.log
    holds the folder's own bytes."""
    cwd = tmp_path / "ünï"
    cwd.mkdir()
    done = _run(cwd, LC_ALL="C", LANG="C", PYTHONUTF8="0")
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode("ascii", "replace")
    assert "Traceback" not in err and "Logging error" not in err, err
    lines = [line for line in said(err) if "start-up held the time to train back" not in line]  # a busy host's
    assert len(lines) == 1 and lines[0].startswith("TensorBoard off: its writer cannot name a file under ")
    assert lines[0].endswith("in this locale; run with a UTF-8 one (PYTHONUTF8=1, or LC_ALL=C.UTF-8) for tb/")
    run_dir, record = _record(cwd)
    assert record["status"] == "success" and not (run_dir / "tb").exists()
    assert f"run dir: {run_dir}".encode() in (run_dir / "train.log").read_bytes()


def test_a_reader_that_leaves_after_the_first_line_leaves_the_run_to_its_end(tmp_path):
    """`python -m harness.train ... | head -1`: every console line after it printed a '--- Logging error ---'
    traceback (BrokenPipeError) on stderr."""
    proc = subprocess.Popen([sys.executable, *RUN], cwd=tmp_path, env=child_env(**TWOPART),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().startswith(b"twopart on ")
    proc.stdout.close()
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0 and b"Traceback" not in err and b"Logging error" not in err, err
    assert _record(tmp_path)[1]["status"] == "success"


def test_a_command_whose_reader_left_ends_as_sigpipe_ends_it_without_a_traceback(tmp_path):
    """`python -m harness.check outputs/ | head -1`: a BrokenPipeError traceback, exit 1 (a failed check's
    status). Now it ends as `yes | head` does: by SIGPIPE, quietly."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "mlperf.log").write_text(':::MLLOG {"key": "x"}\n')  # a FAIL line to print
    proc = subprocess.Popen([sys.executable, "-m", "harness.check", "run"], cwd=tmp_path,
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(timeout=180)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err
    assert proc.returncode == -13  # SIGPIPE


def test_a_run_whose_standard_output_is_closed_runs_to_its_end(tmp_path):
    """`python -m harness.train ... >&-`: Python starts with no sys.stdout, and the run failed on
    sys.stdout.isatty() after its first epoch's setup ("AttributeError: 'NoneType' object has no attribute
    'isatty'"); `harness.report --md - >&-` ended on a traceback. What goes there is now dropped."""
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, *RUN], cwd=tmp_path,
                          env=child_env(**TWOPART), stderr=subprocess.PIPE, timeout=180)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    run_dir, record = _record(tmp_path)
    assert record["status"] == "success"
    report = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "harness.report",
                             str(run_dir), "--md", "-"], cwd=tmp_path, env=child_env(), stderr=subprocess.PIPE,
                            timeout=180)
    assert report.returncode == 0 and b"Traceback" not in report.stderr, report.stderr
