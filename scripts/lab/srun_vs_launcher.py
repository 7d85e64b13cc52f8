"""Throughput of a 2-rank CPU run started by `srun -n2` against the same run started by the harness's
own launcher (`gpus=2`), measured back to back, alternating, on the SLURM cluster SLURM_CONF names.

    python -m tests.e2e.slurm_cluster &            # a single-node SLURM here (prints SLURM_CONF; kill %1 stops it)
    SLURM_CONF=/tmp/slurm-XXXX/slurm.conf python scripts/lab/srun_vs_launcher.py --pairs 3
    python scripts/lab/srun_vs_launcher.py --pairs 5 --out docs/benchmarks/srun_vs_launcher.md

Each run is `python -m harness.train model=ncf device=cpu seed=S` (the embedded NCF preset, to its
target) with the harness's thread policy, under --dir; the throughput is result.json's (samples/s
over training time after warm-up, summed over ranks). Prints each pair, the medians and their ratio
(issue: srun within 1.25x of the launcher), with the machine's load at the start, and the date.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = ["-m", "harness.train", "model=ncf", "device=cpu", "progress=false"]
NICE = ["nice", "-n", "10"]  # a shared machine: the same for both ways of starting


def _throughput(root: Path, env: dict, cmd: list[str]) -> float:
    before = set(root.rglob("result.json"))
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    (new,) = set(root.rglob("result.json")) - before
    result = json.loads(new.read_text())
    assert result["world_size"] == 2, result["world_size"]
    return float(result["throughput"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="launcher/srun pairs, alternating (default 3)")
    parser.add_argument("--dir", default="outputs/benchmark/srun_vs_launcher", help="where the runs go")
    parser.add_argument("--out", help="also append the table to this Markdown file")
    args = parser.parse_args()
    if "SLURM_CONF" not in os.environ and subprocess.run(["sinfo"], capture_output=True).returncode != 0:
        sys.exit("no SLURM here: start one (python -m tests.e2e.slurm_cluster) and set SLURM_CONF")
    root = Path(args.dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                              "HARNESS_THREAD_POLICY")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    load = os.getloadavg()
    rows, launcher, srun = [], [], []
    for i in range(args.pairs):
        seed = f"seed={i + 1}"
        # both under nice: slurmd, not this process, is the parent of srun's tasks
        launcher.append(_throughput(root, env, [*NICE, sys.executable, *RUN, "gpus=2", seed, "output_root=launcher"]))
        srun.append(_throughput(root, env, ["srun", "-n2", *NICE, sys.executable, *RUN, seed, "output_root=srun"]))
        rows.append(f"| {seed} | {launcher[-1]:,.0f} | {srun[-1]:,.0f} | {launcher[-1] / srun[-1]:.2f} |")
        print(rows[-1], flush=True)
    ratio = statistics.median(launcher) / statistics.median(srun)
    text = "\n".join([
        f"## srun -n2 vs gpus=2, embedded NCF, {datetime.date.today()}, {platform.node()} "
        f"({len(os.sched_getaffinity(0))} CPUs, load average {load[0]:.1f} at the start)", "",
        "| seed | launcher samples/s | srun samples/s | launcher / srun |", "|---|---|---|---|", *rows,
        f"| median | {statistics.median(launcher):,.0f} | {statistics.median(srun):,.0f} | {ratio:.2f} |", ""])
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
