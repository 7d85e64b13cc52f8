"""The CPU thread policy: threads from the CPUs other processes leave free, passive waiting, the
user's own OpenMP settings first, and the choice in place before torch starts in every process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from harness.run import threads
from tests.helpers import REPO, child_env


def test_an_idle_host_gives_its_cpus_to_the_ranks_and_a_busy_core_is_left_alone():
    idle = threads.choose(cpus=2, other_cpu_pct=3.0, local_ranks=1)
    assert (idle.omp_num_threads, idle.omp_wait_policy, idle.chosen_by) == (2, "PASSIVE", "harness")
    assert threads.choose(2, 97.0, 1).omp_num_threads == 1  # one core spinning elsewhere
    assert threads.choose(2, 0.0, 2).omp_num_threads == 1  # two ranks share two cores
    assert threads.choose(2, 100.0, 2).omp_num_threads == 1  # never fewer than one
    assert threads.choose(16, 400.0, 4).omp_num_threads == 3
    assert threads.choose(2, 400.0, 1).reason == "2 usable CPUs, 1 kept busy by other processes, 1 local rank(s)"
    assert threads.choose(8, None, 1).omp_num_threads == 8  # no /proc: the CPUs, waiting passively


def test_the_users_openmp_settings_win_and_the_harness_own_do_not_count_as_the_users():
    user = threads.decide(1, env={"OMP_NUM_THREADS": "3"})
    assert (user.chosen_by, user.omp_num_threads, user.omp_wait_policy) == ("user", 3, None)
    assert threads.decide(1, env={"OMP_WAIT_POLICY": "ACTIVE"}).chosen_by == "user"
    env: dict[str, str] = {}
    threads.export(threads.choose(2, 0.0, 1), env)
    assert env["OMP_NUM_THREADS"] == "2" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert threads.decide(2, env=env).chosen_by == "harness"  # inherited from the harness: decided anew
    env["OMP_NUM_THREADS"] = "1"  # ... but a value the user changed afterwards is the user's
    assert threads.decide(2, env=env).chosen_by == "user"


def _probe(env: dict[str, str], code: str) -> dict:
    """A fresh interpreter that starts harness.train as a command does (its main(), here with --help),
    then imports torch and reports."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != threads.ENV}
    script = ("import contextlib, io, json, os, harness.train\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n    harness.train.main(['--help'])\n"
              f"import torch; from harness.run import threads; print(json.dumps({code}))")
    out = subprocess.run([sys.executable, "-c", script], env=child_env(full, **env),
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_importing_the_command_chooses_nothing_and_imports_no_torch():
    full = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != threads.ENV}
    out = subprocess.run([sys.executable, "-c", "import json, os, sys, harness.train; "
                          "print(json.dumps(['torch' in sys.modules, os.environ.get('OMP_NUM_THREADS')]))"],
                         env=child_env(full), capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, None]


def test_the_policy_is_in_place_before_torch_starts_openmp():
    seen = _probe({}, "[torch.get_num_threads(), os.environ['OMP_WAIT_POLICY'], threads.current().record()]")
    torch_threads, wait, record = seen
    assert wait == "PASSIVE" and record["chosen_by"] == "harness"
    assert torch_threads == record["omp_num_threads"] <= len(os.sched_getaffinity(0))
    user = _probe({"OMP_NUM_THREADS": "1"}, "[torch.get_num_threads(), threads.current().record()]")
    assert user[0] == 1 and user[1]["chosen_by"] == "user" and "OMP_NUM_THREADS=1" in user[1]["reason"]


def test_a_spawned_rank_keeps_what_its_launcher_chose():
    chosen = threads.ThreadPolicy(1, "PASSIVE", "harness", "chosen by the launcher for 2 ranks", 2)
    env: dict[str, str] = {}
    threads.export(chosen, env)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        assert threads.apply_at_start("__mp_main__") == chosen
    finally:
        os.environ.clear()
        os.environ.update(saved)
        threads._current = None
