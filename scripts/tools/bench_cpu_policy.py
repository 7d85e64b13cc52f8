"""CPU runs on a shared machine: the harness's thread policy against OpenMP's default, idle and with
one core taken by another process.

    python scripts/tools/bench_cpu_policy.py --out docs/benchmarks/cpu_policy_$(date +%F).md
    python scripts/tools/bench_cpu_policy.py --models ncf --seeds 1 2 3 --repeats 1 --gpus 1 2 --out ncf.md
    python scripts/tools/bench_cpu_policy.py --models gnmt --set max_epochs=1 --out gnmt.md

Every combination of model x ranks (--gpus, CPU ranks) x load x seed x repeat x policy is one
`python -m harness.train model=M seed=S device=cpu gpus=N` run on the model's embedded preset:

- policies: `old` is what runs did before the policy (OMP_NUM_THREADS = CPUs / ranks, OpenMP's
  default spinning wait, as torchrun sets it), `new` is the harness's measured choice
  (harness/run/threads.py), `one` is OMP_NUM_THREADS=1 (the reference figure of the issue);
- loads: `idle` runs alone, `one-core` runs beside `python -c "while True: pass"`.

The Markdown table gives, per row, the median over its runs (seeds x repeats) of time to train, of
the epochs' training seconds and of throughput, the epochs to converge, the statuses, the threads
the runs used and the CPU share other processes took during the runs (result.json's host_load: an
"idle" row whose neighbours were busy says so). Below it: one-core / idle ratios per policy. Runs go under --root
(a temporary folder by default); the table to --out and stdout, one JSON line per run to --out.jsonl.
With --timeout S a run still going after S seconds is stopped with SIGTERM and shows as "timeout"
(its time to train counts as the slowest in the median, shown as "> S" when the median is one).
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the harness: the usage under python -OO, the machine's CPU model

from harness.usage import module_doc  # noqa: E402

POLICIES = ("old", "new", "one")
LOADS = ("idle", "one-core")


def policy_env(policy: str, ranks: int) -> dict[str, str]:
    """The process environment of a run under `policy`, the caller's OpenMP settings removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != "HARNESS_THREAD_POLICY"}
    env["PYTHONPATH"] = str(REPO)
    if policy == "old":
        env["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // ranks))
    elif policy == "one":
        env["OMP_NUM_THREADS"] = "1"
    return env


def run_one(root: Path, model: str, ranks: int, load: str, policy: str, seed: int, repeat: int, extra: list[str],
            timeout_s: Optional[float]) -> dict:
    out = root / f"{model}_{ranks}r_{load}_{policy}_s{seed}_{repeat}"
    cmd = [sys.executable, "-m", "harness.train", f"model={model}", f"seed={seed}", "device=cpu", f"gpus={ranks}",
           "progress=false", "tensorboard=false", f"output_root={out}", *extra]
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "one-core" else None
    timed_out = False
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, env=policy_env(policy, ranks), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:  # stopped as `timeout` would: the run is aborted, its result kept
            timed_out = True
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate()
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    row = {"model": model, "ranks": ranks, "load": load, "policy": policy, "seed": seed, "repeat": repeat,
           "exit": "timeout" if timed_out else proc.returncode}
    results = list(out.rglob("result.json"))
    if not results:
        row["error"] = (err.strip().splitlines() or ["no result.json"])[-1]
        return row
    r = json.loads(results[0].read_text())
    epochs = [e["train_seconds"] for e in r.get("epochs", []) if e.get("train_seconds")]
    host = r.get("host_load") or {}
    ttt = r.get("time_to_train_s") if r["status"] == "success" else None  # an aborted run has no time to train
    return {**row, "status": r["status"], "time_to_train_s": ttt,
            "epoch_s": statistics.median(epochs) if epochs else None, "throughput": r.get("throughput"),
            "epochs_to_converge": r.get("epochs_to_converge"), "epochs_run": r.get("epochs_run"),
            "threads": (r.get("threads") or {}).get("torch_threads"),
            "others_start_pct": host.get("other_cpu_pct_start"), "others_mean_pct": host.get("other_cpu_pct_mean")}


def _median(rows: list[dict], key: str) -> Optional[float]:
    """The median over the runs; a run stopped by --timeout counts as the slowest (infinite) time."""
    values = [float("inf") if r["exit"] == "timeout" and key == "time_to_train_s" else r[key] for r in rows
              if r.get(key) is not None or (r["exit"] == "timeout" and key == "time_to_train_s")]
    return statistics.median(values) if values else None


def _fmt(x: Optional[float], spec: str = ".1f", timeout: Optional[float] = None) -> str:
    if x == float("inf"):
        return f"> {timeout:g}"
    return "n/a" if x is None else format(x, spec)


def table(rows: list[dict], timeout: Optional[float] = None) -> str:
    lines = ["| model | ranks | load | policy | runs | time to train s (median) | epoch s (median) | "
             "samples/s (median) | epochs | status | threads | others' CPU % during |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["ranks"], r["load"], r["policy"]), []).append(r)
    for (model, ranks, load, policy), g in groups.items():
        epochs = ",".join(str(r.get("epochs_to_converge") or f"({r.get('epochs_run')})") for r in g)
        status = ",".join("timeout" if r["exit"] == "timeout" else r.get("status") or f"exit {r['exit']}" for r in g)
        threads = ",".join(sorted({str(r.get("threads")) for r in g}))
        lines.append(f"| {model} | {ranks} | {load} | {policy} | {len(g)} | {_fmt(_median(g, 'time_to_train_s'), timeout=timeout)} | "
                     f"{_fmt(_median(g, 'epoch_s'), '.2f')} | {_fmt(_median(g, 'throughput'), ',.0f')} | {epochs} | "
                     f"{status} | {threads} | {_fmt(_median(g, 'others_mean_pct'), '.0f')} |")
    lines += ["", "one-core / idle, medians (acceptance: time to train and epoch time within 1.5x for `new`):", ""]
    for (model, ranks, load, policy), g in groups.items():
        idle = groups.get((model, ranks, "idle", policy))
        if load != "one-core" or not idle:
            continue
        ratios = []
        for key, name in (("time_to_train_s", "time to train"), ("epoch_s", "epoch time")):
            a, b = _median(g, key), _median(idle, key)
            if a is not None and b and b != float("inf"):
                if a == float("inf") and timeout is not None:  # runs stopped by --timeout: at least that long
                    ratios.append(f"{name} > {timeout / b:.1f}x")
                else:
                    ratios.append(f"{name} {a / b:.2f}x")
        lines.append(f"- {model}, {ranks} rank(s), policy {policy}: {', '.join(ratios) or 'n/a (timed out)'}")
    busy_idle = [r for r in rows if r["load"] == "idle" and (r.get("others_mean_pct") or 0) >= 50]
    if busy_idle:
        lines += ["", f"Note: {len(busy_idle)} of the \"idle\" runs had neighbours using half a core or more "
                      "(others' CPU % column): those figures were measured on a loaded machine."]
    return "\n".join(lines) + "\n"


def machine() -> str:
    from harness.observe.host_load import usable_cpus
    from harness.observe.system import cpu_model

    return (f"{cpu_model()}, {len(usable_cpus())} usable CPUs, load average {os.getloadavg()[0]:.2f} at the start, "
            f"{platform.platform()}")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["ncf", "gnmt"])
    ap.add_argument("--gpus", nargs="+", type=int, default=[1], help="CPU ranks per run (gpus= with device=cpu)")
    ap.add_argument("--loads", nargs="+", choices=LOADS, default=list(LOADS))
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=["old", "new"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[1])
    ap.add_argument("--repeats", type=int, default=3, help="runs of each seed (the issue's figure: 3 of seed 1)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides for every run")
    ap.add_argument("--root", type=Path, default=None, help="where the runs go (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=None, metavar="S",
                    help="stop a run after S seconds with SIGTERM (the row then says timeout)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    header = [f"# CPU thread policy: {', '.join(args.models)} idle and beside one busy core",
              "", f"{datetime.date.today()}, {machine()}.", "",
              "    python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]), "", ""]
    root = args.root or Path(tempfile.mkdtemp(prefix="bench_cpu_policy_"))
    rows = []
    with open(args.out.with_suffix(".jsonl"), "w") as jsonl:
        for model in args.models:
            for ranks in args.gpus:
                for load in args.loads:
                    # policies take turns: a drift in the machine's load hits each alike
                    for seed, repeat, policy in itertools.product(args.seeds, range(args.repeats), args.policies):
                        row = run_one(root, model, ranks, load, policy, seed, repeat, args.set, args.timeout)
                        print(json.dumps(row), file=sys.stderr)
                        jsonl.write(json.dumps(row) + "\n")
                        rows.append(row)
    text = "\n".join(header) + table(rows, args.timeout)
    args.out.write_text(text)
    print(text)
    return 0 if all(r["exit"] in (0, "timeout") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
