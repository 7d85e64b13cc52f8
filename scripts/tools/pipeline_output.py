"""What the pipeline bench says about one measurement: the bottleneck in words, the lines it prints, one
JSON line (--json) and one Markdown row (--table). pipeline_bench.py imports it; run that:

    python scripts/tools/pipeline_bench.py model=ncf +debug=ncf device=cpu --steps 3 --table pipeline.md
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path
from typing import Any

HEADER = ("| model | settings | decode | loader alone | training on files | synthetic step | real / synthetic "
          "| target | data wait | bottleneck |\n|---|---|---|---|---|---|---|---|---|---|\n")


def verdict(rates: dict[str, float], wait_share: float, target: float, workers: Any, decode: Any, unit: str) -> str:
    ratio = rates["real"] / rates["synthetic"]
    if ratio >= target:
        return f"keeps up: real / synthetic {ratio:.3f} >= {target:.2f}"
    if rates["loader"] < rates["synthetic"]:
        return (f"input-bound: the loader alone delivers {rates['loader']:,.0f} {unit}/s ({workers} workers, "
                f"decode={decode}) of the {rates['synthetic']:,.0f} the step consumes")
    if wait_share > 0.05:
        # ResNet-50 on an H100 (docs/benchmarks/gpu_check_2026-12-06.md): nvJPEG's kernels, queued behind the
        # step's on a shared hardware queue, kept the decode thread waiting, not the host's cores
        return (f"beside training: the loader keeps up alone but the step waits {wait_share:.0%} of the time for "
                "batches (the host's cores shared by workers, decode thread and training, or the decode's GPU "
                "work queued behind the step's: --profile's timeline shows which)")
    return (f"the GPU: the step waits {wait_share:.1%} of the time for batches yet runs at {ratio:.2f} of its rate on "
            "held batches (the input pipeline's kernels or copies share the GPU with the step)")


def stage_breakdown(thread: dict[str, Any]) -> dict[str, float]:
    """ms per batch of each stage the decode thread timed (DeviceBatches.add: stage_<name>_s)."""
    n = max(1, int(thread.get("batches", 0)))
    return {k[len("stage_"):-len("_s")]: v / n * 1e3 for k, v in thread.items() if k.startswith("stage_")}


def describe(rates: dict[str, float], stalls: dict[str, float], wait_share: float, workers: float | None,
             thread: dict[str, Any] | None, unit: str, why: str) -> None:
    """The figures as lines: each rate, the epochs' first-batch waits, the decode thread's time, the verdict."""
    for name, rate in rates.items():
        print(f"{name:>9}: {rate:,.0f} {unit}/s")
    print(f"each epoch waits {stalls['real']:.2f} s for its first batch ({stalls['loader']:.2f} s loading alone); "
          f"the step waited {wait_share:.1%} of the real window for batches")
    if workers is not None:
        print(f"  workers: {workers:,.0f} {unit}/s (the DataLoader alone, before the GPU decodes)")
    if thread and thread["batches"]:
        per = {k: thread[k] / thread["batches"] * 1e3 for k in ("loader_wait_s", "prepare_s", "gpu_s")}
        print(f"  decode thread during the real window, per batch: {per['loader_wait_s']:.1f} ms waiting for the "
              f"workers, {per['prepare_s']:.1f} ms preparing on the host, {per['gpu_s']:.1f} ms on the side stream")
        stages = stage_breakdown(thread)
        if stages:
            print("  its host time by stage, per batch: " + ", ".join(f"{k} {v:.2f} ms" for k, v in stages.items()))
    print(f"real / synthetic = {rates['real'] / rates['synthetic']:.3f}: {why}")


def record(args: argparse.Namespace, model: str, unit: str, decode: str, why: str, measured: dict[str, Any],
           teardown: float, notes: list[str], device: Any) -> dict[str, Any]:
    """The result as one JSON line on stdout, appended to --json, and as a Markdown row appended to --table
    (its header first when the file is new)."""
    rates, thread, wait_share = measured["rates"], measured["thread"], measured["wait_share"]
    ratio = rates["real"] / rates["synthetic"]
    result = {"script": "pipeline_bench", "model": model, "label": args.label or f"model={model}",
              "overrides": args.overrides, "unit": unit, "decode": decode, **rates,
              "epoch_start_s": measured["stalls"], "real_over_synthetic": ratio, "target": args.target,
              "reached": ratio >= args.target, "data_wait_share": wait_share, "verdict": why, "steps": args.steps,
              "hold": args.hold, "workers_alone": measured["workers"], "decode_thread": thread,
              "decode_stages_ms": stage_breakdown(thread) if thread else None, "teardown_s": teardown,
              "notes": notes, "warm_pass": args.warm_pass, "date": datetime.date.today().isoformat(),
              "host": platform.node(), "device": _device_name(device)}
    _append_json(args, result)
    if args.table:
        path = Path(args.table)
        new = not path.exists()
        settings = " ".join(o for o in args.overrides if not o.startswith(("dataset.path=", "model=")))
        with path.open("a") as f:
            if new:
                f.write(HEADER)
            first = f" (first pass {rates['first_pass']:,.0f})" if "first_pass" in rates else ""
            f.write(f"| {result['label']} | `{settings}` | {decode} | {rates['loader']:,.0f} {unit}/s | "
                    f"{rates['real']:,.0f}{first} | {rates['synthetic']:,.0f} | **{ratio:.3f}** | {args.target:.2f} | "
                    f"{wait_share:.1%} | {why} |\n")
    return result


def record_build(args: argparse.Namespace, model: str, decode: str, seconds: float, notes: list[str]) -> dict[str, Any]:
    """--build-only: the decode backend the build chose (model.decode=auto: the probe's choice), as a line, a
    JSON line and a Markdown row."""
    result = {"script": "pipeline_bench", "model": model, "label": args.label or f"model={model}",
              "overrides": args.overrides, "build_only": True, "decode": decode, "build_s": seconds, "notes": notes,
              "date": datetime.date.today().isoformat()}
    print(f"built in {seconds:.1f} s: model.decode resolved to {decode}")
    _append_json(args, result)
    if args.table:
        with open(args.table, "a") as f:
            f.write(f"| {result['label']} | `{' '.join(args.overrides[1:])}` | **{decode}** (chosen at build, "
                    f"{seconds:.0f} s) | | | | | | | {'; '.join(notes)} |\n")
    return result


def _append_json(args: argparse.Namespace, result: dict[str, Any]) -> None:
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


def _device_name(device: Any) -> str:
    if device.type != "cuda":
        return "cpu"
    import torch

    return torch.cuda.get_device_name(device)
