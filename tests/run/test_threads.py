"""The CPU thread policy: threads from the CPUs other processes leave free, passive waiting, the
user's own OpenMP settings first, and the choice in place before torch starts in every process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.errors import ConfigError
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


def test_importing_the_command_chooses_nothing_and_imports_no_torch():
    full = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != threads.ENV}
    out = subprocess.run([sys.executable, "-c", "import json, os, sys, harness.train; "
                          "print(json.dumps(['torch' in sys.modules, os.environ.get('OMP_NUM_THREADS')]))"],
                         env=child_env(full), capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, None]


# Each launch path's first steps in a fresh interpreter. The two commands go as far as a run goes before
# its host checks refuse it (an output_root that is a file: a config that composed, checked on this host,
# which harness.train does with torch loaded; a bad option is refused before torch); the other paths differ
# from harness.train only in their environment, so --help (no torch: cheap) takes them through the same main().
_BAD = "'model=ncf', 'output_root=pyproject.toml'"
_HELP = "import harness.train; harness.train.main(['--help'])"
_LAUNCH_PATHS = {  # name: (code, environment, local ranks the policy is for, torch loaded by the code)
    "harness.train": (f"import harness.train; harness.train.main([{_BAD}])", {}, 1, True),
    # the sweep refuses the folder before torch (it draws its seeds with torch loaded); its runs are harness.train's
    "harness.sweep": (f"import harness.sweep; harness.sweep.main(['runs=2', {_BAD}])", {}, 1, False),
    "multirun": ("import harness.train; harness.train.main(['-m', 'seed=1,2', '--help'])", {}, 1, False),
    "torchrun rank": (_HELP, {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, 2, False),
    "srun rank": (_HELP, {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0", "SLURM_NNODES": "1"}, 2,
                  False),
    # a submitit task unpickles the launcher first: the plugin's module, then the rest of the job
    "submitit task": ("import hydra_plugins.harness_slurm_launcher", {"SUBMITIT_EXECUTOR": "slurm"}, 1, False),
    "a user's OMP_NUM_THREADS": (_HELP, {"OMP_NUM_THREADS": "1"}, None, False),
}
# The environment torch's OpenMP starts with: as it was when torch was first imported, or, where the
# code did not import it, as the run's torch would find it
_WATCH = """import contextlib, dataclasses, io, json, os, sys
OMP = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not seen:
            seen.update({k: os.environ.get(k) for k in OMP})
sys.meta_path.insert(0, Watch())
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    %s
torch = sys.modules.get("torch")
from harness.run import threads
print(json.dumps([seen or {k: os.environ.get(k) for k in OMP}, torch and torch.get_num_threads(),
                  dataclasses.asdict(threads.current())]))
"""


def test_every_launch_path_sets_the_same_policy_before_torch_starts_openmp():
    """train, a multirun, harness.sweep, a torchrun or srun rank and a submitit task: OpenMP starts
    with the harness's choice for the ranks on the host, and torch runs that many threads."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OMP_", "SLURM_", "SUBMITIT_")) and k != threads.ENV
             and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    procs = {name: subprocess.Popen([sys.executable, "-c", _WATCH % code], env=child_env(clean, **env),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
             for name, (code, env, _, _) in _LAUNCH_PATHS.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name}: {err}"
        at_start, torch_threads, policy = json.loads(out)
        _, _, ranks, loads_torch = _LAUNCH_PATHS[name]
        if ranks is None:
            assert policy["chosen_by"] == "user" and "OMP_NUM_THREADS=1" in policy["reason"], name
        else:
            assert (policy["chosen_by"], policy["local_ranks"]) == ("harness", ranks), name
            cpus = len(os.sched_getaffinity(0))
            assert policy["omp_num_threads"] == threads.choose(cpus, policy["other_cpu_pct"], ranks).omp_num_threads
            assert at_start["OMP_WAIT_POLICY"] == "PASSIVE", name
        assert at_start["OMP_NUM_THREADS"] == str(policy["omp_num_threads"]), name
        assert (torch_threads is not None) == loads_torch, name
        if loads_torch:
            assert torch_threads == policy["omp_num_threads"], name


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


@pytest.mark.parametrize("env", [{"OMP_NUM_THREADS": "abc"}, {"OMP_NUM_THREADS": "0"}, {"OMP_NUM_THREADS": ""},
                                 {"OMP_NUM_THREADS": "4,x"}, {"OMP_WAIT_POLICY": "fast"}])
def test_an_openmp_setting_openmp_would_ignore_is_refused_naming_it(env):
    """OpenMP ignores such a value (printing a line of its own) and starts its default, spinning team of one
    thread per core, while result.json said the user had chosen: an embedded NCF run took 100 s instead of 5 s
    on a busy 2-core host. Its list form ('4,2': a count per nesting level) is OpenMP's and stays the user's."""
    ((name, value),) = env.items()
    with pytest.raises(ConfigError, match=rf"^{name}={value!r} is not (a thread count|PASSIVE or ACTIVE)"):
        threads.decide(1, env=env)
    assert threads.decide(1, env={"OMP_NUM_THREADS": " 4,2 "}).omp_num_threads == 4


def test_a_command_given_an_openmp_setting_openmp_would_ignore_stops_in_one_line_before_anything(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness.train", "model=ncf", "seed=1", "output_root=out"],
                          cwd=tmp_path, env=child_env({k: v for k, v in os.environ.items() if k != threads.ENV},
                                                      OMP_NUM_THREADS="abc"),  # as a user's shell has it
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("harness.train: error: OMP_NUM_THREADS='abc' is not a thread count, a whole number from 1 "
                           "(OpenMP would ignore it); set it so, or unset it and the harness picks the threads from "
                           "the host's load\n")
    assert list(tmp_path.iterdir()) == []
