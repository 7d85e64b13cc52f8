"""Tacotron 2's training step, this tree's model against an earlier tree's, in one process on one GPU:
the same weights (copied), the same batch, the harness's own step (harness.run.loop.train_step), each
precision built as a run builds it. Prints one JSON line per variant and writes OUT/tacotron2.md.

    python scripts/lab/tacotron2_versions.py --base .lab/base --out OUT --precisions amp tf32
    python scripts/lab/tacotron2_versions.py --base .lab/base --out /tmp/t --set +debug=tacotron2 device=cpu \\
        --precisions fp32 --warmup 1 --steps 1 --repeats 2          # tiny, on the CPU

Each variant: --warmup steps (the first one more), then --repeats windows of --steps steps, each closed by a device
synchronisation; its figure is the median window in mel frames/s (the frames of the batch's
utterances, padding left out, as the harness counts). Variants run in the order given (this tree
first, then the base, per precision) and none starts once --budget-s would be passed, so a caller's
time limit cuts the last ones, not the table.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness.config import compose  # noqa: E402
from harness.run.build import BuiltRun, build_run, context_for, device_sync  # noqa: E402
from harness.run.loop import train_step  # noqa: E402


def base_model_class(base: Path):
    """The Tacotron2 class of the earlier tree (its model.py imports torch alone)."""
    path = base / "reference_models" / "tacotron2" / "model.py"
    spec = importlib.util.spec_from_file_location("base_tacotron2_model", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no Tacotron 2 model at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Tacotron2


def with_model(run: BuiltRun, model: torch.nn.Module) -> BuiltRun:
    """`run` training `model` instead: its weights copied from the run's, a fresh optimizer like the run's."""
    model.load_state_dict(run.bench.model.state_dict())
    hp, bench = run.ctx.cfg.model, run.bench
    bench.model = model  # type: ignore[misc]
    bench.optimizer = torch.optim.Adam(model.parameters(), lr=hp.learning_rate, weight_decay=hp.weight_decay,
                                       fused=run.ctx.device.type == "cuda")
    return BuiltRun(bench, run.precision, run.ctx, model, run.feed, "throughput")


def measure(run: BuiltRun, warmup: int, steps: int, repeats: int) -> dict:
    sync = device_sync(run.ctx.device)
    batch = run.synthetic_batch()
    run.trained.train()
    t0 = time.perf_counter()
    for _ in range(warmup):
        train_step(run, batch)
    sync()  # sync point: warm-up ends when its work has
    warm_s = time.perf_counter() - t0
    windows = []
    for _ in range(repeats):
        t = time.perf_counter()
        frames = sum(train_step(run, batch)[2] for _ in range(steps))
        sync()  # sync point: the window's work is finished
        windows.append(frames / (time.perf_counter() - t))
    return {"throughput": statistics.median(windows), "windows": windows, "warmup_s": round(warm_s, 2),
            "frames_per_step": batch.frames, "max_frames": int(batch.inputs["mels"].shape[2])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True, help="the earlier tree (a copy of main: .lab/base)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--precisions", nargs="+", default=["amp", "tf32"])
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="harness overrides for every variant")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=1e9, help="start no variant after this many seconds")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    Base = base_model_class(args.base.resolve())
    t0, rows = time.perf_counter(), []
    for precision in args.precisions:
        for tree in ("this", "base"):
            if time.perf_counter() - t0 > args.budget_s:
                rows.append({"precision": precision, "tree": tree, "skipped": f"--budget-s {args.budget_s:g} passed"})
                continue
            cfg = compose(["model=tacotron2", "mode=throughput", f"precision={precision}", "seed=1", *args.set])
            OmegaConf.resolve(cfg)
            run = build_run(cfg, context_for(cfg))
            if tree == "base":
                run = with_model(run, Base(cfg.model).to(run.ctx.device))
            # the first variant's warm-up also pays the process's one-off work (CUDA, cuDNN, cuBLAS set-up)
            warmup = args.warmup + (1 if not any("throughput" in r for r in rows) else 0)
            row = {"precision": precision, "tree": tree, "batch": int(cfg.model.batch_size), **measure(
                run, warmup, args.steps, args.repeats), "device": str(run.ctx.device), "torch": torch.__version__}
            rows.append(row)
            print(json.dumps(row), flush=True)
            write(args.out, rows)  # after every variant: a caller's time limit keeps what was measured
            del run
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    write(args.out, rows)


def write(out: Path, rows: list[dict]) -> None:
    (out / "tacotron2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = ["| precision | tree | batch | mel frames/s (median) | windows | this / base |", "|---|---|---|---|---|---|"]
    done = {(r["precision"], r["tree"]): r for r in rows if "throughput" in r}
    for r in rows:
        if "throughput" not in r:
            lines.append(f"| {r['precision']} | {r['tree']} | | {r['skipped']} | | |")
            continue
        base = done.get((r["precision"], "base"))
        ratio = f"{r['throughput'] / base['throughput']:.2f}x" if r["tree"] == "this" and base else ""
        lines.append(f"| {r['precision']} | {r['tree']} | {r['batch']} | {r['throughput']:,.0f} | "
                     f"{', '.join(f'{w:,.0f}' for w in r['windows'])} | {ratio} |")
    amp, tf32 = done.get(("amp", "this")), done.get(("tf32", "this"))
    if amp and tf32:
        lines += ["", f"amp / tf32, this tree: {amp['throughput'] / tf32['throughput']:.2f}x"]
    (out / "tacotron2.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
