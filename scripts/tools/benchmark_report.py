"""How long `harness.report` takes over many real-size MLPerf logs.

    python scripts/tools/benchmark_report.py                       # 1,000 logs of about 1 MB, 3 timings
    python scripts/tools/benchmark_report.py --files 200 --repeats 5 --out docs/benchmarks/report.md

Writes --files logs shaped like real submissions (NVIDIA's v0.7 GNMT logs: a launcher's shell trace,
per-iteration training lines from the framework, MLLOG events from 8 ranks with duplicated init_start,
per-epoch blocks, evaluations and tracked_stats), padded with more of the same to --size bytes each,
under --dir (default outputs/benchmark/report_logs, kept between runs). Then times the whole
`python -m harness.report DIR --json FILE` command, --repeats times, and reports the median with
the machine and the date.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # harness/usage.py: the usage under python -OO

from harness.usage import module_doc  # noqa: E402


def mllog(key: str, value, t: int, event: str = "POINT_IN_TIME", **meta) -> str:
    record = {"namespace": "", "time_ms": t, "event_type": event, "key": key, "value": value,
              "metadata": {"file": "train.py", "lineno": 300, **meta}}
    return ":::MLLOG " + json.dumps(record)


def one_log(seed: int, size: int) -> str:
    rng = random.Random(seed)
    t = 1_593_019_117_722 + seed * 10_000_000
    lines = ["+ echo 'Beginning trial 1 of 1'", "Beginning trial 1 of 1",
             "srun: Job 467813 step creation temporarily disabled, retrying"]
    for key, value in (("submission_benchmark", "gnmt"), ("submission_org", "NVIDIA"), ("submission_division", "closed"),
                       ("submission_status", "onprem"), ("submission_platform", "1xNVIDIA DGX-1")):
        lines.append(mllog(key, value, t))
    lines.append(mllog("cache_clear", True, t + 6000))
    lines += [f"[{r}] " + mllog("init_start", None, t + 10_000 + r, "INTERVAL_START") for r in range(8)]
    lines.append(mllog("seed", rng.randrange(2**32), t + 16_000))
    for key, setting in (("global_batch_size", 2048), ("opt_base_learning_rate", 0.002), ("max_sequence_length", 75),
                       ("opt_learning_rate_warmup_steps", 200), ("opt_learning_rate_remain_steps", 6453),
                       ("opt_learning_rate_decay_interval", 809), ("opt_learning_rate_decay_steps", 4),
                       ("opt_learning_rate_decay_factor", 0.5), ("opt_learning_rate_alt_decay_func", True),
                       ("opt_learning_rate_alt_warmup_func", True), ("train_samples", 3969024), ("eval_samples", 3003)):
        lines.append(mllog(key, setting, t + 20_000))
    lines.append(mllog("init_stop", None, t + 26_000, "INTERVAL_END"))
    lines.append(mllog("run_start", None, t + 26_001, "INTERVAL_START"))
    now, epochs = t + 26_001, rng.choice([4, 4, 4, 5])
    body: list[str] = []
    for epoch in range(1, epochs + 1):
        body.append(mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=epoch, epoch_count=1))
        body.append(mllog("epoch_start", None, now, "INTERVAL_START", epoch_num=epoch))
        for it in range(0, 1938, 10):
            body.append(f"0: TRAIN [{epoch - 1}][{it}/1938]\tTime 0.{rng.randrange(100, 999)} (0.281)\t"
                        f"Data 1.2e-04 (1.5e-04)\tTok/s {rng.randrange(90000, 110000)} (100634)\t"
                        f"Loss/tok {rng.uniform(3, 8):.4f} (5.1234)\tLR 2.000e-03")
            body.append(mllog("tracked_stats", {"throughput": rng.uniform(7e5, 8e5)}, now, step=it))
        now += 276_000
        body.append(mllog("epoch_stop", None, now, "INTERVAL_END", epoch_num=epoch))
        body.append(mllog("eval_start", None, now, "INTERVAL_START", epoch_num=epoch))
        now += 2_000
        body.append(mllog("eval_accuracy", round(0.2 + 0.011 * epoch, 4), now, epoch_num=epoch))
        body.append(mllog("eval_stop", None, now, "INTERVAL_END", epoch_num=epoch))
        body.append(mllog("block_stop", None, now, "INTERVAL_END", first_epoch_num=epoch))
    text = "\n".join(lines + body)
    filler, i, length = [], 0, len(text)
    while length < size - 200:  # more of the framework's own chatter
        filler.append(f"0: TRAIN [0][{i % 1938}/1938]\tTime 0.279 (0.281)\tData 1.2e-04 (1.5e-04)\t"
                      f"Tok/s {100000 + i % 999} (100634)\tLoss/tok 4.{i % 9999:04d} (5.1234)\tLR 2.000e-03")
        length += len(filler[-1]) + 1
        i += 1
    return "\n".join(lines + filler + body + [mllog("run_stop", None, now, "INTERVAL_END", status="success")]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default="outputs/benchmark/report_logs")
    parser.add_argument("--out", default="-")
    args = parser.parse_args()

    root = Path(args.dir).resolve()
    for i in range(args.files):
        path = root / f"system_{i // 10:03d}" / f"result_{i % 10}.txt"
        if not path.is_file() or abs(path.stat().st_size - args.size) > 50_000:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(one_log(i, args.size))
    total = sum(p.stat().st_size for p in root.rglob("result_*.txt"))
    cmd = [sys.executable, "-m", "harness.report", str(root), "--json", str(root.parent / "report.json")]
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
    runs = len(json.loads((root.parent / "report.json").read_text())["runs"])
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    text = (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}: "
        f"`python -m harness.report DIR --json FILE` over {args.files} logs ({total / 1e9:.2f} GB, {runs} runs read): "
        f"median {statistics.median(times):.1f} s of {args.repeats} "
        f"(min {min(times):.1f}, max {max(times):.1f}); `python scripts/tools/benchmark_report.py --files {args.files}`\n"
    )
    if args.out == "-":
        print(text, end="")
    else:
        with open(args.out, "a") as f:
            f.write(text)
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
