"""How long `harness.report` (and `harness.check`) take over a whole round's worth of official logs.

    python scripts/tools/benchmark_round.py                            # about 2,000 logs of the v0.7-v4.0 fixtures
    python scripts/tools/benchmark_round.py --logs 2000 --rounds v0.5,v0.6,v0.7,v2.1,v3.0,v4.0 --repeats 3 --check

Builds a synthetic round under --dir (default: a temporary folder, removed afterwards): the real submission
folders of ../shared/fixtures/mlperf_trees (or HARNESS_SHARED) copied again and again, each copy under another
organisation's name (`<round>/<Org>_<k>/results/<system>/<benchmark>/result_*.txt` with its systems/ and
scaling.json), until there are --logs logs. Every log is then read as a round is read: the official checker
with its round's ruleset, the RCP checker's convergence reading, the summarizer's scores. Times
`python -m harness.report DIR --json FILE` --repeats times (and with --check `python -m harness.check DIR`
once) and prints the median with the machine, its load and the date.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # harness/usage.py: the usage under python -OO

from harness.usage import module_doc  # noqa: E402
SHARED = Path(os.environ.get("HARNESS_SHARED") or REPO.parent / "shared")


def org_folders(trees: Path, rounds: list[str]) -> list[Path]:
    """The folders that hold a results/ folder (an organisation, or a v0.5 submission), in the chosen rounds."""
    found = {p.parent for p in trees.rglob("results") if p.is_dir()}
    return sorted(f for f in found if f.relative_to(trees).parts[0] in rounds)


def build_round(trees: Path, rounds: list[str], logs: int, dest: Path) -> int:
    orgs = org_folders(trees, rounds)
    per_copy = sum(len(list(o.rglob("result_*.txt"))) for o in orgs)
    if per_copy == 0:
        raise SystemExit(f"no result_*.txt under {trees} for rounds {rounds}")
    copies = -(-logs // per_copy)
    for k in range(copies):
        for org in orgs:
            target = dest / org.relative_to(trees).parent / f"{org.name}_{k:03d}"
            shutil.copytree(org, target, dirs_exist_ok=True)
    return sum(1 for _ in dest.rglob("result_*.txt"))


def _cpu() -> str:
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main() -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--logs", type=int, default=2000)
    parser.add_argument("--rounds", default="v0.7,v2.1,v3.0,v4.0", help="fixture rounds to copy (comma-separated)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="also time python -m harness.check over the round")
    parser.add_argument("--dir", help="build the round here and keep it (default: a temporary folder)")
    args = parser.parse_args()
    trees = SHARED / "fixtures" / "mlperf_trees"
    rounds = [r.strip() for r in args.rounds.split(",") if r.strip()]
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="round_"))
    try:
        root = work / "round"
        if root.exists():
            shutil.rmtree(root)
        count = build_round(trees, rounds, args.logs, root)
        size = sum(p.stat().st_size for p in root.rglob("result_*.txt"))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-m", "harness.report", str(root), "--json", str(work / "report.json")]
        times, load = [], []
        for _ in range(args.repeats):
            load.append(os.getloadavg()[0])
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
            times.append(time.perf_counter() - t0)
            if proc.returncode not in (0, 1):  # 1: some published runs have problems, as real rounds do
                print(proc.stderr[-2000:], file=sys.stderr)
                return 1
        data = json.loads((work / "report.json").read_text())
        counted = sum(1 for r in data["runs"] if r["counted"])
        text = (f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores ({_cpu()}), Python "
                f"{platform.python_version()}, load average before each run {', '.join(f'{x:.1f}' for x in load)}: "
                f"`python -m harness.report ROUND --json FILE` over {count} logs of rounds {', '.join(rounds)} "
                f"({size / 1e6:.0f} MB; {len(data['runs'])} runs read, {counted} scored, {len(data['groups'])} "
                f"groups): median {statistics.median(times):.1f} s of {args.repeats} (min {min(times):.1f}, "
                f"max {max(times):.1f})")
        if args.check:
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "harness.check", str(root)], cwd=REPO, capture_output=True,
                                  text=True, env=env)
            text += (f"; `python -m harness.check ROUND`: {time.perf_counter() - t0:.1f} s "
                     f"({proc.stdout.strip().splitlines()[-1 - len(rounds)] if proc.stdout.strip() else 'no output'})")
        print(text)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
