"""Throughput of the models' real-scale presets on this machine's GPUs, measured side by side.

    python scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 --out bench.md
    python scripts/lab/benchmark_gpu.py --models gnmt ncf --precisions fp32 tf32 amp bf16 --gpus 1 2 \
        --set model.batch_size=256 --out bench.md
    python scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 2 \
        --variants model.batch_size=512 model.batch_size=1024,master_weights=true --out bench.md

Each combination is one `python -m harness.train ... mode=throughput` run: the real-scale preset
(the model's real dataset config; no data is read), `warmup_steps` uncounted steps, then
`throughput_repeats` windows of `throughput_steps` steps. The table gives the median window and
the spread of the windows, with the exact command, the machine, the date and the torch version.
Each --variants entry (comma-separated overrides) is a row of its own for every model, precision
and GPU count; the GPU-count ratio compares rows of the same variant. Runs go under --root; the
Markdown table goes to --out (and stdout), one JSON line per run to --out with .jsonl.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness import registry  # noqa: E402


def gpu_name() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return f"{torch.cuda.device_count()}x {torch.cuda.get_device_name(0)}"
    except Exception:  # the table still says what ran
        pass
    return "no CUDA device"


def run_one(model: str, precision: str, gpus: int, root: Path, extra: list[str], timeout: float) -> dict:
    spec = registry.get(model)
    args = [f"model={model}", f"dataset={spec.task.real_dataset}", "mode=throughput", f"precision={precision}",
            f"gpus={gpus}", "progress=false", f"output_root={root}", *extra]
    cmd = [sys.executable, "-m", "harness.train", *args]
    shown = "python -m harness.train " + " ".join(shlex.quote(a) for a in args if not a.startswith("output_root="))
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"command": shown, "error": f"no result within {timeout:.0f} s"}
    results = sorted(root.rglob("result.json"), key=lambda p: p.stat().st_mtime)
    result = json.loads(results[-1].read_text()) if results and proc.returncode == 0 else None
    if result is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"command": shown, "error": tail[0]}
    windows = [e["throughput"] for e in result["epochs"] if e["throughput"]]
    if not windows:
        return {"command": shown, "error": "the run measured no window"}
    return {
        "command": shown,
        "unit": result["throughput_unit"],
        "median": statistics.median(windows),
        "min": min(windows),
        "max": max(windows),
        "windows": len(windows),
        "global_batch": result["global_batch_size"],
        "platform": result["platform"],
        "run_precision": result["precision"],  # "amp+master" with master_weights=true
        "torch": result["versions"]["torch"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gnmt", "ncf"])
    parser.add_argument("--precisions", nargs="+", default=["amp"])
    parser.add_argument("--gpus", nargs="+", type=int, default=[1])
    parser.add_argument("--set", nargs="*", default=[], help="extra key=value overrides for every run")
    parser.add_argument("--variants", nargs="*", default=[""],
                        help="comma-separated overrides, one row per entry, e.g. model.batch_size=1024,master_weights=true")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    parser.add_argument("--root", default="outputs/benchmark")
    parser.add_argument("--out", default="-")
    args = parser.parse_args()

    root = Path(args.root).resolve()
    rows = []
    for model in args.models:
        for precision in args.precisions:
            for v, variant in enumerate(args.variants):
                overrides = [o for o in variant.split(",") if o]
                for gpus in args.gpus:
                    run_root = root / f"{model}-{precision}-v{v}-{gpus}gpu"
                    row = run_one(model, precision, gpus, run_root, [*args.set, *overrides], args.timeout)
                    row.update(model=model, precision=precision, gpus=gpus, variant=variant)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    if args.out != "-":
                        with open(Path(args.out).with_suffix(".jsonl"), "a") as f:
                            f.write(json.dumps(row) + "\n")

    import torch

    lines = [
        f"Machine: {gpu_name()}, host {platform.node()}; date {datetime.date.today().isoformat()}; "
        f"torch {torch.__version__}, CUDA {torch.version.cuda}.",
        "",
        "| model | precision | GPUs | global batch | median | spread (min-max) | command |",
        "|---|---|---|---|---|---|---|",
    ]
    base: dict[tuple[str, str, str], float] = {}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['precision']} | {r['gpus']} | | failed: {r['error']} | | `{r['command']}` |")
            continue
        spread = f"{r['min']:,.0f}-{r['max']:,.0f} ({(r['max'] - r['min']) / r['median']:.1%})"
        ratio = ""
        key = (r["model"], r["precision"], r["variant"])
        if r["gpus"] == min(args.gpus):
            base[key] = r["median"]
        elif key in base:
            ratio = f" ({r['median'] / base[key]:.3f}x {min(args.gpus)} GPU)"
        lines.append(f"| {r['model']} | {r['run_precision']} | {r['gpus']} | {r['global_batch']} | "
                     f"{r['median']:,.0f} {r['unit']}{ratio} | {spread}, {r['windows']} windows | `{r['command']}` |")
    table = "\n".join(lines) + "\n"
    if args.out == "-":
        print(table)
    else:
        Path(args.out).write_text(table)
        print(table)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
