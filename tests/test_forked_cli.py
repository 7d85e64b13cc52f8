"""tests/forked_cli.py: a harness.train run that run_cli forks reads and answers as its own process does."""
from __future__ import annotations

import subprocess
from pathlib import Path
import sys

import pytest

from tests import forked_cli
from tests.helpers import child_env, run_cli

pytestmark = pytest.mark.skipif(not forked_cli._forks_here(), reason="run_cli forks on a host without a GPU only")


def test_a_forked_run_answers_a_bad_option_as_its_own_process_does(tmp_path):
    argv = ("harness.train", "model=ncf", "model.no_such_option=1", f"output_root={tmp_path}")
    forked = forked_cli.run_forked(argv[0], argv[1:], tmp_path, child_env(), 120, child_env())
    assert forked is not None  # this one was forked
    own = subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True,
                         env=child_env(), timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (own.returncode, own.stdout, own.stderr)
    assert forked.returncode != 0 and "no_such_option" in forked.stderr


def test_a_forked_run_works_in_its_own_folder_and_environment(tmp_path):
    """A model that only this run's environment registers (HARNESS_MODELS), its output under the run's cwd."""
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false", cwd=tmp_path,
                  env={"HARNESS_MODELS": "tests.models.twopart"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"run dir: {tmp_path / 'out'}" in out.stdout  # relative to the run's cwd, not the forker's


def test_a_forked_report_and_check_answer_as_their_own_processes_do(tmp_path):
    """harness.report and harness.check forked from the loaded process: the same output and exit status as
    `python -m` gives, on a run of their own and on a path that is not there."""
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false", cwd=tmp_path,
                  env={"HARNESS_MODELS": "tests.models.twopart"})
    assert out.returncode == 0, out.stderr[-2000:]
    (run_dir,) = (tmp_path / "out").rglob("result.json")
    env = child_env(HARNESS_MODELS="tests.models.twopart")
    for argv in (("harness.report", str(tmp_path / "out")), ("harness.check", str(run_dir.parent)),
                 ("harness.report", str(tmp_path / "nothing_here"))):
        forked = forked_cli.run_forked(argv[0], argv[1:], tmp_path, env, 120, child_env())
        assert forked is not None, argv  # this one was forked
        own = subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=120)
        assert (forked.returncode, forked.stdout, forked.stderr) == (own.returncode, own.stdout, own.stderr), argv


def test_what_is_read_at_start_or_several_ranks_get_a_process_of_their_own():
    base = child_env()
    assert not forked_cli._same_start({**base, "OMP_NUM_THREADS": "3"}, base)
    assert forked_cli._same_start({**base, "HARNESS_MODELS": "tests.models.twopart"}, base)
    assert not forked_cli._one_process(("model=ncf", "gpus=2"))
    assert not forked_cli._one_process(("-m", "hydra/launcher=slurm", "model=ncf"))
    assert forked_cli._one_process(("model=ncf", "gpus=1", "seed=1"))
    assert forked_cli.run_forked("harness.sweep", ("model=ncf",), Path("."), base, 10, base) is None  # not forked
