"""Transformer-XL, BERT and WaveGlow steps of two trees side by side in one process: the previous
implementation (--base, a copy of main's tree) and this one, at the same workload, amp, synthetic
batches, short windows.

    source scripts/lab/device_env.sh && bash scripts/lab/attn_sidebyside.sh "$OUT"
    python3 scripts/lab/attn_sidebyside.py --base .lab/base --out OUT --budget 36
    python3 scripts/lab/attn_sidebyside.py --base /tmp/base --out /tmp/sbs --smoke   # CPU, debug presets

One process measures both trees so that torch's import and CUDA's start are paid once: for each
workload the base tree's harness and models are imported (every harness and reference_models module
dropped from sys.modules first), the run is built and stepped through that tree's own
harness.run.loop.train_step, then the same for this tree. Each measurement is `--warmup` uncounted
steps, then `--repeats` windows of the workload's steps between two device syncs; the table gives
the median window and the range. "syncs" counts the host syncs that
torch.cuda.set_sync_debug_mode reports in one more step (the backward's warnings reach Python through
autograd's replay of its device thread's warnings). Workloads run in
the order below until --budget seconds have passed; results are written after each one, so a run
cut short by `timeout` still leaves its table.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# (label, model, overrides, warm-up steps, steps per window): the brief's three first
WORKLOADS = [
    ("txl_base b32", "txl_base", [], 3, 8),
    ("bert_large squad384 b32", "bert_large", [], 3, 6),
    ("waveglow b10", "waveglow", [], 3, 4),
    ("waveglow b24", "waveglow", ["model.batch_size=24"], 3, 3),
    ("txl_large b16", "txl_large", [], 3, 4),
]


def use_tree(tree: Path) -> None:
    """Import harness and reference_models from `tree` from now on."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("harness", "reference_models", "hydra_plugins"):
            del sys.modules[name]
    keep = [p for p in sys.path if Path(p or ".").resolve() not in (REPO, tree.resolve())]
    sys.path[:] = [str(tree), *keep]


def measure(tree: Path, model: str, overrides: list[str], warmup: int, steps: int, repeats: int,
            smoke: bool = False) -> dict:
    import torch

    cuda = not smoke
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    use_tree(tree)
    torch.backends.cudnn.benchmark = False  # a tree that wants it sets it again while it builds
    from omegaconf import OmegaConf

    from harness.config import compose
    from harness.run.build import build_run, context_for
    from harness.run.loop import train_step

    with tempfile.TemporaryDirectory() as tmp:
        where = ["device=cuda", "precision=amp"] if cuda else ["device=cpu", f"+debug={model}"]
        cfg = compose([f"model={model}", "mode=throughput", *where, "seed=1", f"output_root={tmp}", "progress=false",
                       *overrides])
        OmegaConf.resolve(cfg)
        started = time.perf_counter()
        # parameters made and drawn on the GPU: the models' CPU initialisation (2-7 s each) would
        # take much of the budget, and a step's time does not depend on which draw its weights came from
        with torch.device("cuda" if cuda else "cpu"):
            run = build_run(cfg, context_for(cfg))
        batch = run.synthetic_batch()
        built_s = time.perf_counter() - started
        model_file = str(sys.modules[type(run.bench).__module__].__file__)  # which tree the model came from
        for _ in range(warmup):
            train_step(run, batch)
        sync()
        windows = []
        for _ in range(repeats):
            t0, samples = time.perf_counter(), 0
            for _ in range(steps):
                samples += train_step(run, batch)[2]
            sync()
            windows.append(samples / (time.perf_counter() - t0))
        syncs, peak_gb = None, 0.0
        if cuda:
            syncs, peak_gb = count_syncs(run, batch, train_step), torch.cuda.max_memory_allocated() / 1e9
        del run, batch
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return {"median": statistics.median(windows), "min": min(windows), "max": max(windows), "windows": windows,
            "build_s": built_s, "syncs": syncs, "peak_gb": peak_gb, "tree": str(Path(model_file).parents[2])}


def count_syncs(run, batch, train_step) -> int | None:
    import torch

    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                train_step(run, batch)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        return sum("synchroniz" in str(w.message) for w in seen)
    except Exception as err:  # the figure is a diagnostic: the throughput stands without it
        print(f"sync count failed: {err}", file=sys.stderr)
        return None


def table(rows: list[dict], machine: str) -> str:
    lines = [f"# Attention models side by side: {machine}", "",
             "amp, synthetic batches, one process, each tree through its own train_step; median window (range).",
             "", "| workload | unit/s base | unit/s new | new / base | syncs base / new | peak GB base / new |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        b, n = r.get("base"), r.get("new")

        def cell(x):
            if x is None:
                return "not run"
            if "error" in x:
                return f"failed: {x['error']}"
            return f"{x['median']:,.0f} ({x['min']:,.0f}-{x['max']:,.0f})"

        ratio = syncs = peak = "-"
        if b is not None and n is not None and "error" not in b and "error" not in n:
            ratio = f"{n['median'] / b['median']:.3f}x"
            syncs = f"{b.get('syncs')} / {n.get('syncs')}"
            peak = f"{b['peak_gb']:.1f} / {n['peak_gb']:.1f}"
        lines.append(f"| {r['label']} | {cell(b)} | {cell(n)} | {ratio} | {syncs} | {peak} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=REPO / ".lab" / "base")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=36.0, help="start no workload after this many seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="the debug presets on the CPU: checks the script, measures nothing")
    args = parser.parse_args()
    started = time.perf_counter()
    import torch

    if args.smoke:
        machine = "CPU smoke run (debug presets)"
    elif not torch.cuda.is_available():
        print("attn_sidebyside needs a CUDA device", file=sys.stderr)
        return 2
    else:
        machine = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for label, model, overrides, warmup, steps in WORKLOADS:
        if time.perf_counter() - started > args.budget:
            rows.append({"label": label, "skipped": "over the time budget"})
            continue
        row: dict = {"label": label, "model": model, "overrides": overrides}
        rows.append(row)
        for name, tree in (("base", args.base), ("new", REPO)):
            try:
                row[name] = measure(tree, model, overrides, warmup, steps, args.repeats, args.smoke)
            except Exception as err:  # one failed workload must not lose the others
                row[name] = {"error": f"{type(err).__name__}: {err}"[:300]}
            print(f"{time.perf_counter() - started:5.1f} s  {label} {name}: {row[name]}", flush=True)
        (args.out / "attn_sidebyside.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
        (args.out / "attn_sidebyside.md").write_text(table([r for r in rows if "skipped" not in r], machine))
    print(table([r for r in rows if "skipped" not in r], machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
