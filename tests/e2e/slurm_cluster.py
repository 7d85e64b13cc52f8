"""A single-node SLURM for the tests: munged, slurmctld and slurmd started on this host from configs
in a temporary folder (nothing under /etc), on free ports, and stopped by their process ids.

Needs Debian's slurm-wlm packages and munge (.ci/run installs them:
`apt-get install slurmctld slurmd slurm-client munge`) and root, since slurmd starts every job's
processes as the user who submitted it.

    python -m tests.e2e.slurm_cluster &    # start one, print `export SLURM_CONF=...`; kill %1 stops it
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sinfo", "srun", "sbatch", "squeue", "scancel")
# Variables a job inherits from the submitting process that would make it something else than what a
# user's job is: the test process's thread policy, or the SLURM job the tests may themselves run in.
_INHERITED = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "HARNESS_THREAD_POLICY")


def unavailable() -> Optional[str]:
    """Why a single-node SLURM cannot start here, or None when it can."""
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if missing:
        return (f"SLURM is not installed ({', '.join(missing)} missing): "
                "apt-get install slurmctld slurmd slurm-client munge, as .ci/run does")
    if os.geteuid() != 0:
        return "a single-node SLURM needs root (slurmd starts jobs as their user)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class SingleNodeSlurm:
    """`with SingleNodeSlurm() as slurm:` a running cluster of this one host; `slurm.env` is the
    environment its commands need (SLURM_CONF)."""

    def __init__(self, cpus: Optional[int] = None, max_time_min: Optional[int] = None):
        self.cpus = cpus or len(os.sched_getaffinity(0))
        self.max_time_min = max_time_min
        self.host = socket.gethostname().split(".")[0]
        self.dir: Optional[Path] = None
        self._procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _INHERITED and not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.dir / "slurm.conf")
        return env

    def __enter__(self) -> "SingleNodeSlurm":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = 60) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="slurm-"))
        self.dir.chmod(0o755)  # munged wants every folder above its socket searchable
        for sub in ("state", "spool", "munge"):
            (self.dir / sub).mkdir()
        (self.dir / "munge").chmod(0o700)
        key = self.dir / "munge" / "munge.key"
        subprocess.run([_binary("mungekey"), "-c", "-k", str(key), "-b", "1024"], check=True, capture_output=True)
        sock = self.dir / "munge.sock"
        self._spawn([_binary("munged"), "-F", "-S", str(sock), f"--key-file={key}",
                     f"--log-file={self.dir / 'munged.log'}", f"--pid-file={self.dir / 'munged.pid'}",
                     f"--seed-file={self.dir / 'munge' / 'munged.seed'}"], "munged")
        self._wait(lambda: sock.exists(), timeout_s, "munged did not create its socket")
        (self.dir / "slurm.conf").write_text(self._config(sock))
        conf = str(self.dir / "slurm.conf")
        self._spawn([_binary("slurmctld"), "-D", "-i", "-f", conf], "slurmctld")
        self._spawn([_binary("slurmd"), "-D", "-f", conf], "slurmd")
        self._wait(self._node_idle, timeout_s, "the node did not come up idle")

    def _config(self, sock: Path) -> str:
        d = self.dir
        return "\n".join([
            "ClusterName=harness-test",
            f"SlurmctldHost={self.host}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'slurmctld.log'}", f"SlurmdLogFile={d / 'slurmd.log'}",
            # no cgroups in a container or a small VM: track a job's processes by their parents
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/affinity",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill", "ReturnToService=2", "MpiDefault=none",
            # no accounting database: the harness's launcher watches jobs through squeue
            "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "KillWait=30", "MinJobAge=600",
            f"NodeName={self.host} CPUs={self.cpus} State=UNKNOWN",
            f"PartitionName=debug Nodes=ALL Default=YES MaxTime={self.max_time_min or 'INFINITE'} State=UP",
            "",
        ])

    def _spawn(self, cmd: list[str], name: str) -> None:
        with open(self.dir / f"{name}.out", "w") as log:  # the daemon keeps its own copy of the descriptor
            self._procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                                start_new_session=True))

    def _node_idle(self) -> bool:
        for proc in self._procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: see {self.dir}")
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def _queue_empty(self) -> bool:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True)
        return out.returncode != 0 or not out.stdout.strip()

    @staticmethod
    def _wait(ready, timeout_s: float, what: str) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if ready():
                return
            time.sleep(0.3)
        raise RuntimeError(what)

    def run(self, *cmd: str, cwd: Optional[Path] = None, timeout: float = 600,
            env: Optional[dict] = None) -> subprocess.CompletedProcess:
        """A SLURM command (srun, sbatch, ...) against this cluster, its output captured."""
        return subprocess.run(list(cmd), cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)

    def log(self, name: str = "slurmctld") -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Cancel what is left, then stop the daemons this object started (by their ids)."""
        if self.dir is None:
            return
        if any(p.poll() is None for p in self._procs):
            subprocess.run(["scancel", "--full", "--user", "root"], env=self.env, capture_output=True, timeout=30)
            try:  # a job's processes outlive slurmd: let them end first (KillWait, then SIGKILL)
                self._wait(self._queue_empty, 45, "jobs still running")
            except RuntimeError:
                pass
        for proc in reversed(self._procs):  # slurmd, slurmctld, then munged
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)
        self._procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None


def _serve() -> None:
    # Ctrl-C, or SIGTERM (`kill %1`: a background job ignores Ctrl-C), stops the cluster
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with SingleNodeSlurm() as cluster:
        print(f"export SLURM_CONF={cluster.dir / 'slurm.conf'}    # Ctrl-C or SIGTERM stops the cluster", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    _serve()
