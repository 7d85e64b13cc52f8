"""`python -m harness.train` refusing to start: a disk already full, or a SLURM launcher without SLURM, is one
line and no run or sweep folder (the end-to-end runs are in tests/e2e/)."""
from __future__ import annotations

import os
from types import SimpleNamespace

from harness import outputs, train


def test_a_disk_already_full_is_one_line_and_leaves_no_run_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "kept.txt").write_text("a user's file\n")
    real = os.statvfs

    def full(path):  # 8 kB left on the disk, inodes to spare
        st = real(path)
        return SimpleNamespace(f_bavail=2, f_frsize=4096, f_files=st.f_files, f_favail=st.f_favail)

    monkeypatch.setattr(outputs.os, "statvfs", full)
    rc = train.main(["model=ncf", "seed=1", f"output_root={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.splitlines() == [f"harness.train: error: output_root={tmp_path / 'out'}: the disk holding {tmp_path} is "
                                "full (8 kB free; a run needs 4 MiB to start); free space or choose another output_root"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]  # no run folder, no empty train.log
    assert (tmp_path / "kept.txt").read_text() == "a user's file\n"


def test_each_config_is_resolved_once_and_the_run_reads_it_as_resolved(tmp_path):
    """The precision and the fast path are filled in once per composed config (the command's checks on
    theirs, the job on its own), and nothing after the job's resolution writes them again: the launcher's config
    is read-only from its plan on, as each rank's is (tests/run/test_session.py)."""
    import json
    import subprocess
    import sys

    from tests.helpers import REPO, child_env

    out = tmp_path / "out"
    count = ("import sys; from harness import fastpath, train; seen = []; real = fastpath.resolve\n"
             "def counting(cfg, *a, **k):\n    seen.append(id(cfg)); return real(cfg, *a, **k)\n"
             "fastpath.resolve = counting\n"
             "from omegaconf import OmegaConf; from harness.run import job; real_launch = job.launch\n"
             "def launching(plan, *a, **k):\n    print('READONLY', OmegaConf.is_readonly(plan.cfg)); return real_launch(plan, *a, **k)\n"
             "job.launch = launching\n"
             f"rc = train.main(['model=ncf', '+debug=ncf', 'device=cpu', 'seed=1', 'data_root={tmp_path / 'data'}', "
             f"'output_root={out}'])\n"
             "print('RESOLVED', len(seen), len(set(seen))); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", count], cwd=REPO, env=child_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "RESOLVED 2 2" in proc.stdout  # the checks' config, then the job's: once each
    assert "READONLY True" in proc.stdout  # planned and its seed drawn: the launch reads it, and nothing writes it
    (result,) = out.rglob("result.json")
    assert json.loads(result.read_text())["precision"] == "fp32"  # resolved for the CPU, as the record says


def test_a_slurm_sweep_refused_by_its_launcher_leaves_no_sweep_folder(tmp_path):
    """hydra/launcher=slurm on a host without SLURM's commands: the launcher refuses in one line (exit 2)
    after Hydra was given the sweep's folder; the folders made for it are removed, a user's are kept. In a
    process of its own: Hydra's logging, set up by the refused launch, would outlive this test's captured
    streams and fail a later test's logging in this process."""
    import os
    import subprocess
    import sys

    from tests.helpers import REPO, child_env

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_text("a user's file\n")
    env = child_env(PATH=f"{tmp_path / 'no-slurm'}{os.pathsep}{os.path.dirname(sys.executable)}")  # no sinfo
    done = subprocess.run([sys.executable, "-m", "harness.train", "-m", "hydra/launcher=slurm", "model=ncf",
                           "device=cpu", "seed=1,2", f"output_root={tmp_path / 'out'}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "harness.train: error: hydra/launcher=slurm needs SLURM's commands (sinfo, sbatch)")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["kept.txt"]  # no sweeps/<date>_ncf_.../
