"""Throughput of the models' real-scale presets on this machine's GPUs, measured side by side.

    python scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 --out bench.md
    python scripts/lab/benchmark_gpu.py --models gnmt ncf --precisions fp32 tf32 amp bf16 --gpus 1 2 \
        --set model.batch_size=256 --out bench.md
    python scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 2 \
        --variants model.batch_size=512 model.batch_size=1024,master_weights=true --out bench.md

Each combination is one `python -m harness.train ... mode=throughput` run: the real-scale preset
(the model's real dataset config; no data is read), `warmup_steps` uncounted steps, then
`throughput_repeats` windows of `throughput_steps` steps. Each --variants entry (comma-separated
overrides) is a row of its own for every model, precision and GPU count, with the median window, the
spread of the windows and the exact command; below it, harness.results.throughput's tables (what
`python -m harness.report ROOT` prints): groups, scaling efficiency across GPU counts, precision
against fp32. Runs go under --root; the Markdown goes to --out (and stdout), one JSON line per run to
--out with .jsonl.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness import registry  # noqa: E402
from harness.results import throughput  # noqa: E402
from harness.results.render import markdown_table  # noqa: E402


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
    dataset = [f"dataset={spec.task.real_dataset}"] if spec.task is not None else []
    args = [f"model={model}", *dataset, "mode=throughput", f"precision={precision}", f"gpus={gpus}",
            "progress=false", f"output_root={root}", *extra]
    cmd = [sys.executable, "-m", "harness.train", *args]
    shown = "python -m harness.train " + " ".join(shlex.quote(a) for a in args if not a.startswith("output_root="))
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"command": shown, "error": f"no result within {timeout:.0f} s"}
    runs = throughput.read_runs([root])
    run = max(runs, key=lambda r: Path(r.path).stat().st_mtime) if runs else None
    if run is None or run.status != "success" or proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"command": shown, "error": (run.reason if run and run.reason else tail[0])}
    if not run.windows:
        return {"command": shown, "error": "the run measured no window"}
    return {"command": shown, "unit": run.unit, "median": run.throughput, "min": min(run.windows),
            "max": max(run.windows), "windows": len(run.windows), "global_batch": run.global_batch_size,
            "platform": run.platform, "run_precision": run.precision,  # "amp+master" with master_weights=true
            "result": run.path}


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
        "| variant | model | precision | GPUs | global batch | median | spread of windows (min-max) | command |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['variant']} | {r['model']} | {r['precision']} | {r['gpus']} | | failed: {r['error']} | | "
                         f"`{r['command']}` |")
            continue
        spread = f"{r['min']:,.0f}-{r['max']:,.0f} ({(r['max'] - r['min']) / r['median']:.1%}), {r['windows']} windows"
        lines.append(f"| {r['variant']} | {r['model']} | {r['run_precision']} | {r['gpus']} | {r['global_batch']} | "
                     f"{r['median']:,.0f} {r['unit']} | {spread} | `{r['command']}` |")
    # the grouped tables: the same as `python -m harness.report ROOT` prints for these results
    runs = throughput.read_runs([row["result"] for row in rows if "result" in row])
    groups = throughput.groups(runs)
    for title, (header, table) in (("Groups", throughput.table_rows(groups)),
                                   ("Scaling across GPU counts", throughput.scaling_rows(throughput.scaling(groups))),
                                   ("Precision against fp32", throughput.gain_rows(throughput.precision_gains(groups)))):
        if table:
            lines += ["", f"{title}:", "", markdown_table(header, table)]
    text = "\n".join(lines) + "\n"
    if args.out != "-":
        Path(args.out).write_text(text)
    print(text)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
