"""The GPU check: what a change to a model, a step, a data path, precision or the fast path must pass on
one GPU before it lands (CI has none). One run, under 9 minutes on one H200, one table against the
recorded baseline (scripts/lab/gpu_check_table.py):

    source scripts/lab/device_env.sh && python3 scripts/lab/gpu_check.py "$OUT"        # on the GPU machine
    python3 scripts/lab/gpu_check.py /tmp/check --cpu-smoke --only throughput embedded   # here: every command runs, tiny

Phases, each row its own process under a limit, and a row that would start past the phase's deadline
written as not run:
  A, at once: (tests, part 3) every test file with a CUDA-only test, pytest-xdist over 6 workers, a per-test
     limit; (embedded, two lanes) each time-to-train model's embedded preset trained to its target at the
     default precision and path, then `python -m harness.check` on its log; (caches) each compiled
     throughput cell once, a step long, so that phase B finds its kernels in Inductor's caches on disk;
     (datasets) the real-data rows' files written on the CPU cores. The GPU is shared here: the times
     to train are shown, not compared.
  B, alone on the GPU: (throughput) `python -m harness.train mode=throughput` of every model at the
     MLPerf batch per GPU, default path and precision, windows sized in seconds (a model whose cell needs more
     memory than the GPU has, gpu_check_rows.GPU_GIB, is marked too large for this GPU and not started).
  C, alone on the GPU: (real data) scripts/lab/pipeline_h200.sh's rows: each model trained on its
     files beside the same batches held on the device (real / held) after a pass over them (its own row:
     the first meeting of each batch shape), and the data wait.
The paths beside the default (the variant cells: before a fix, or candidates; the real rows gpu_check_rows.BEFORE_FIX
names) run with --before.
OUT gets check.json (every row), check.md (the table against the baseline) and logs.tgz (each row's console); exit
status 1 when a row failed, did not run or is over 5% slower. gpu_check_process.py runs each command (its own group).

On one H200 the whole check takes about 26 minutes (2026-12-02: part 1 527 s; part 2, the real-data rows
with their warm pass, over 520 s), over the device tool's 10 minutes a command, so it runs as three calls of
under 9 minutes, made one after the other while the machine is held, whose tables are read together
(gpu_check_rows.LATER_CALLS names the throughput cells and embedded presets of parts 2 and 3). A copy of the tree whose .git is not the
tree's own names its commit through CHECK_COMMIT:

    CHECK_COMMIT=abc1234 python3 scripts/lab/gpu_check.py "$OUT/a" --part 1 --budget-s 520    # call 1
    CHECK_COMMIT=abc1234 python3 scripts/lab/gpu_check.py "$OUT/b" --part 2 --budget-s 520    # call 2
    CHECK_COMMIT=abc1234 python3 scripts/lab/gpu_check.py "$OUT/c" --part 3 --budget-s 520    # call 3
    python3 scripts/lab/gpu_check_table.py a/check.json b/check.json c/check.json            # here
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

# this folder (the check's other modules) and the checkout (harness/usage.py: the usage under python -OO)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]
import gpu_check_table  # noqa: E402
from gpu_check_process import REPO, Check, last_line, machine, run_dir_of  # noqa: E402
from gpu_check_rows import (COMPILED, EMBEDDED, LATER_CALLS, REAL_DATA, THROUGHPUT, VARIANTS, BEFORE_FIX,  # noqa: E402
                            GPU_GIB, WINDOWS, pipeline_label, throughput_args)
from harness.usage import module_doc  # noqa: E402

MLPERF_BATCH = dict(THROUGHPUT)  # each model's row, kept for its variants when --part or --models drops the row

# the phases of each of the check's calls (--part). The tests moved from part 1 to part 3 on 2026-12-05: beside
# part 1's six embedded presets and its compiles they were cut at the phase's 252-255 s on an H200 and on an
# H100 (231-235 of about 240 tests finished), where part 3's two presets and seven cells took 106-185 s of 520
PARTS = {1: {"embedded", "throughput"}, 2: {"throughput", "real"}, 3: {"tests", "embedded", "throughput"}}

PY = sys.executable
CPU_SMOKE = ["device=cpu", "precision=fp32"]  # --cpu-smoke: each command once, tiny, on this machine's CPU


def tests(check: Check, deadline: float) -> None:
    files = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")
                   if "cuda.is_available()" in p.read_text())
    xml = check.work / "tests.xml"
    argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra", "-n", "6", "--dist", "loadfile",
            "--no-loadscope-reorder", "-o", "timeout=150", "-p", "no:benchmark", f"--junitxml={xml}", *files]
    rc, console = check.run("tests", argv, deadline - check.elapsed())
    if not xml.is_file():
        check.row("tests", "tests", f"{len(files)} files with CUDA tests", "not run" if rc == 124 else "failed",
                  note=f"exit {rc}: {last_line(console)}")
        return
    passed = failed = skipped = 0
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if kinds & {"failure", "error"}:
            failed += 1
            check.row(f"test:{name}", "tests", name, "failed", note="see logs/tests.txt")
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
    status = "ok" if rc == 0 else "failed" if failed else "not run"
    check.row("tests", "tests", f"{len(files)} files with CUDA tests", status, passed, "passed", "none",
              f"{failed} failed, {skipped} skipped" + ("" if rc in (0, 1) else f"; exit {rc}: cut at the limit"))


def embedded(check: Check, deadline: float, models: list[str]) -> None:
    for model in models:
        label = f"{model} embedded preset"
        if check.elapsed() > deadline:
            check.row(f"embedded:{model}", "embedded", label, "not run", note="past the phase's deadline")
            continue
        argv = [PY, "-m", "harness.train", f"model={model}", "seed=1", "progress=false",
                f"output_root={check.work / 'emb'}"] + (CPU_SMOKE + [f"+debug={model}"] if check.smoke else [])
        rc, console = check.run(f"embedded_{model}", argv, min(240.0, deadline - check.elapsed() + 60))
        run_dir = run_dir_of(console)
        result = _result(run_dir)
        if rc != 0 or result is None:
            check.row(f"embedded:{model}", "embedded", label, "failed", note=f"exit {rc}: {last_line(console)}")
            continue
        crc, cconsole = check.run(f"check_{model}", [PY, "-m", "harness.check", str(run_dir)], 120)
        reached = result.get("status") == "success"
        status = "ok" if (reached and crc == 0) or check.smoke else "failed"  # a debug preset need not converge
        note = (f"{result.get('status')}, {result.get('quality_metric')} {result.get('final_quality')}, "
                f"{result.get('precision')}; harness.check exit {crc}" + ("" if crc == 0 else f": {last_line(cconsole)}"))
        check.row(f"embedded:{model}", "embedded", label, status, result.get("time_to_train_s"), "s to train", "none", note)


def _result(run_dir: Optional[Path]) -> Optional[dict[str, Any]]:
    try:
        return json.loads((run_dir / "result.json").read_text()) if run_dir else None
    except (OSError, ValueError):
        return None


def datasets(check: Check, data: Path) -> None:
    # COCO: 31 batches of 128 an epoch, more than twice what 15 workers hold ahead (pipeline_bench.small_epochs)
    sizes = ("400", "200") if check.smoke else ("4000", "4000")
    # each only where a row reads it: the text rows generate their own (a Transformer-only check skips both)
    needs = {"imagenet": ("resnet",), "coco": ("ssd", "maskrcnn")}
    for kind, folder, n in (("imagenet", "inet500", sizes[0]), ("coco", "coco640", sizes[1])):
        if not any(row.split(":")[0] in needs[kind] for row in REAL_DATA):
            continue
        rc, console = check.run(f"dataset_{kind}", [PY, "scripts/tools/pipeline_datasets.py", kind, str(data / folder),
                                                    "--images", n], 240)
        if rc != 0:
            check.row(f"dataset:{kind}", "real data", f"{kind} files", "failed", note=f"exit {rc}: {last_line(console)}")


def throughput_argv(check: Check, model: str, overrides: list[str], windows: list[str]) -> list[str]:
    argv = [PY, "-m", "harness.train", *throughput_args(model, overrides, windows), f"output_root={check.work / 'tput'}"]
    if check.smoke:
        # the real scale's sizes leave with its dataset: the debug preset's model and data go together
        sizes = ("dataset=", "model.batch_size=", "model.layers=", "model.num_embeddings_per_feature=")
        argv = [a for a in argv if not a.startswith(sizes)] + CPU_SMOKE + [f"+debug={model}"]
    return argv


def warm_caches(check: Check, deadline: float) -> None:
    """Phase A: each compiled cell once, a step long, so that Inductor's caches on disk hold its kernels."""
    for model in [m for m in COMPILED if m in THROUGHPUT]:
        if check.elapsed() > deadline:
            return
        check.run(f"warm_{model}", throughput_argv(check, model, THROUGHPUT[model],
                                                   ["warmup_steps=1", "throughput_steps=1", "throughput_repeats=1"]),
                  max(deadline - check.elapsed(), 10))


def throughput(check: Check, deadline: float, gpu_gib: Optional[float]) -> None:
    cells = [(f"throughput:{m}", m, o, "") for m, o in THROUGHPUT.items()]
    cells += [(f"throughput:{key}", m, MLPERF_BATCH[m] + o, why) for key, m, o, why in VARIANTS]
    for key, model, overrides, why in cells:
        label = f"{model} {' '.join(o for o in overrides if not o.startswith('dataset=')) or 'preset batch'}"
        group = "throughput, beside the default" if why else "throughput"
        late = check.elapsed() > deadline
        if late or (gpu_gib and gpu_gib < GPU_GIB.get(model, 0)):
            check.row(key, group, label, "not run" if late else "too large", note="past the phase's deadline" if late
                      else f"needs a GPU of {GPU_GIB[model]} GiB or more; this one has {gpu_gib:g}")
            continue
        windows = ["warmup_s=1", "throughput_window_s=0.5", "throughput_repeats=1"] if check.smoke else WINDOWS
        rc, console = check.run(key.replace(":", "_"), throughput_argv(check, model, overrides, windows),
                                min(120.0, max(deadline - check.elapsed() + 60, 30)))
        result = _result(run_dir_of(console))
        if rc != 0 or result is None or result.get("status") != "success":
            # a variant kept for comparison may fail as the old path did: a row to read, not a failure of the check
            check.row(key, group, label, "ok" if why else "failed", note=f"{why}: " * bool(why) +
                      f"exit {rc}: {last_line(console)}")
            continue
        mfu = result.get("mfu")
        note = f"{why}; " * bool(why) + f"{result.get('precision')}" + \
            (f"; fell back: {result['fallback']}" if result.get("fallback") else "") + \
            (f"; {result['achieved_tflops']:.0f} TFLOP/s, MFU {100 * mfu:.1f}%" if mfu is not None else
             f"; MFU n/a ({result['mfu_note']})" if result.get("mfu_note") else "")
        check.row(key, group, label, "ok", result.get("throughput"), str(result.get("throughput_unit") or ""),
                  "none" if why else "higher", note)


def real_data(check: Check, data: Path, deadline: float) -> None:
    out = check.work / "pipe"
    # 40-step windows after a pass over the same epochs (WARM_PASS): the held replay meets only shapes the real
    # window met first, so without it the real side alone pays each shape's first meeting (cuDNN plans, allocator
    # blocks), which a 20-step window of Transformer batches weighs at ~20%; that pass is kept as its own row
    env = {"PIPELINE_DATA": str(data), "PIPELINE_WORK": str(check.work / "pipe_work"), "STEPS": "40", "WARMUP": "6",
           "WARM_PASS": "1", "LIMIT": "100", "SSD_STEPS": "20", "DEADLINE": str(max(int(deadline - check.elapsed()) - 45, 1))}
    if check.smoke:
        env.update(DEVICE="cpu", PRECISION="fp32", RESNET_COMPILE="false", RESNET_BATCH="4", SSD_BATCH="4", STEPS="3",
                   WARMUP="1", RESNET_EXTRA="+debug=resnet", SSD_EXTRA="+debug=ssd")
    rc, console = check.run("real_data", ["bash", "scripts/lab/pipeline_h200.sh", str(out), *REAL_DATA],
                            max(deadline - check.elapsed() + 30, 30), env)
    lines = (out / "pipeline.jsonl").read_text().splitlines() if (out / "pipeline.jsonl").is_file() else []
    done = {}
    for line in lines:
        rec = json.loads(line)
        done[rec["label"]] = rec
    table = (out / "pipeline.md").read_text() if (out / "pipeline.md").is_file() else ""
    for name in REAL_DATA:
        label = pipeline_label(name)
        rec = done.get(label)
        if rec is None:
            said = next((ln for ln in table.splitlines() if ln.startswith(f"| {label} |")), "")
            status = "not run" if "not run" in said or rc == 124 else "failed"
            check.row(f"real:{name}:ratio", "real data", f"{label}: real / held", status,
                      note=said.split("|")[2].strip() if said else f"no row (exit {rc})")
            continue
        unit, why = rec.get("unit", ""), BEFORE_FIX.get(name)
        group, compare = ("real data, before a fix", "none") if why else ("real data", "higher")
        # the loader alone slower than the held step: the rate on files is the host's CPUs decoding, and the lent
        # host is not the same machine from one call to the next (SSD's 8 workers: 499, 595, 735 images/s)
        on_files = "host" if compare == "higher" and rec["loader"] < rec["synthetic"] else compare
        check.row(f"real:{name}:ratio", group, f"{label}: real / held", "ok", round(rec["real_over_synthetic"], 3),
                  "", on_files, f"{why + '; ' if why else ''}data wait {rec['data_wait_share']:.1%}; "
                  f"{rec.get('verdict', '')}"[:150])
        check.row(f"real:{name}:real", group, f"{label}: on files", "ok", rec["real"], f"{unit}/s", on_files,
                  f"loader alone {rec['loader']:,.0f}")
        check.row(f"real:{name}:held", group, f"{label}: held batches", "ok", rec["synthetic"], f"{unit}/s", compare)
        if rec.get("first_pass"):
            check.row(f"real:{name}:first_pass", group, f"{label}: first pass / held", "ok",
                      round(rec["first_pass"] / rec["synthetic"], 3), "", "none",
                      f"{rec['first_pass']:,.0f} {unit}/s: each batch shape met for the first time, as a run's first epoch")


def deadlines(only: set[str], part: Optional[int], budget_s: float) -> tuple[float, float]:
    """Phase A's and phase B's deadlines, seconds from the start. With phase C (real data) the budget splits
    32:28:40; without B, A has it all; else A and B split it 50:50, or 65:35 in part 3, whose tests need
    more than half and whose cells less."""
    if "real" in only:
        return 0.32 * budget_s, 0.60 * budget_s
    if "throughput" not in only:
        return budget_s, budget_s
    return (0.65 if part == 3 else 0.50) * budget_s, budget_s


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu_check"), help="runs, datasets and logs (OUT "
                        "gets check.json, check.md and logs.tgz alone)")
    parser.add_argument("--budget-s", type=float, default=520.0, help="the whole check's seconds")
    parser.add_argument("--only", nargs="+", choices=["tests", "embedded", "throughput", "real"],
                        help="these phases' rows alone (default: all)")
    parser.add_argument("--models", nargs="+", help="these models' rows alone (default: every model)")
    parser.add_argument("--part", type=int, choices=[1, 2, 3], help="one of the check's calls: 1 the embedded "
                        "presets and most throughput cells; 2 some cells and the real-data rows; 3 the tests, and the "
                        "cells and embedded presets of MLPerf's current benchmarks")
    parser.add_argument("--before", action="store_true", help="also the paths before a fix (gpu_check_rows.BEFORE_FIX "
                        "and VARIANTS): shown beside the default, not compared; left out by default to keep each part "
                        "under its call")
    parser.add_argument("--variants", nargs="+", metavar="KEY", help="these variant cells alone "
                        "(gpu_check_rows.VARIANTS' keys, e.g. bert_large:fp32_norms) beside their defaults")
    parser.add_argument("--cpu-smoke", action="store_true", help="each command at a debug size on the CPU: a check of "
                        "the check, not of the GPU")
    args = parser.parse_args(argv)
    only = set(args.only or ["tests", "embedded", "throughput", "real"])
    if args.variants:
        unknown = set(args.variants) - {v[0] for v in VARIANTS}
        if unknown:
            parser.error(f"unknown variant(s) {sorted(unknown)}: choose from {sorted(v[0] for v in VARIANTS)}")
        VARIANTS[:] = [v for v in VARIANTS if v[0] in args.variants]
    # every model with a row in some part (part 2's real rows name models whose throughput cells are part 1's)
    models = set(MLPERF_BATCH) | set(EMBEDDED) | {r.split(":")[0] for r in REAL_DATA}
    if args.models and set(args.models) - models:
        parser.error(f"unknown model(s) {sorted(set(args.models) - models)}: choose from {sorted(models)}")
    if not args.before:
        REAL_DATA[:] = [r for r in REAL_DATA if r not in BEFORE_FIX]
        if not args.variants:
            VARIANTS.clear()
    if args.part:
        only &= PARTS[args.part]

        def keep(key: str) -> bool:
            return LATER_CALLS.get(key, 1) == args.part
        for name in [m for m in THROUGHPUT if not keep(m)]:
            del THROUGHPUT[name]
        VARIANTS[:] = [v for v in VARIANTS if keep(v[0])]  # a variant goes where its own key says
        EMBEDDED[:] = [m for m in EMBEDDED if keep(f"embedded:{m}")]
    if args.models:
        for name in [m for m in THROUGHPUT if m not in args.models]:
            del THROUGHPUT[name]
        EMBEDDED[:] = [m for m in EMBEDDED if m in args.models]
        VARIANTS[:] = [v for v in VARIANTS if v[1] in args.models]
        REAL_DATA[:] = [r for r in REAL_DATA if r.split(":")[0] in args.models]
        rows = {"embedded": EMBEDDED, "throughput": [*THROUGHPUT, *VARIANTS], "real": REAL_DATA}
        if "tests" not in only and not any(rows[phase] for phase in only):
            parser.error(f"no row of {'part ' + str(args.part) if args.part else 'the check'} in "
                         f"{'/'.join(sorted(only))} is of model(s) {sorted(args.models)}: leave out --part, or name "
                         "the phase with --only (part 2's real-data rows: --only real)")
    out = args.out.resolve()
    check = Check(out, args.work.resolve(), args.budget_s, args.cpu_smoke)
    data = Path(os.environ.get("PIPELINE_DATA", str(check.work / "data")))
    print(json.dumps(info := machine()), flush=True)
    # phase A: the GPU shared by the tests and the embedded presets; the files written on the cores
    a_deadline, b_deadline = deadlines(only, args.part, args.budget_s)
    half = (len(EMBEDDED) + 1) // 2
    with ThreadPoolExecutor(5) as pool:
        jobs = [pool.submit(tests, check, a_deadline)] if "tests" in only else []
        jobs += [pool.submit(embedded, check, a_deadline, lane) for lane in (EMBEDDED[:half], EMBEDDED[half:])
                 if "embedded" in only]
        jobs += [pool.submit(warm_caches, check, a_deadline)] if "throughput" in only and not args.cpu_smoke else []
        jobs += [pool.submit(datasets, check, data)] if "real" in only and not args.cpu_smoke else []
        for job in jobs:
            job.result()
    if "throughput" in only:  # phase B: alone on the GPU
        throughput(check, b_deadline, info.get("gpu_gib"))
    if "real" in only and not args.cpu_smoke:  # phase C: alone on the GPU (its CPU check: pipeline_h200.sh's own)
        real_data(check, data, args.budget_s)
    commit = os.environ.get("CHECK_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                                              capture_output=True, text=True).stdout.strip()
    record = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit or None, "command": " ".join(["scripts/lab/gpu_check.py", *sys.argv[1:]]),
              "machine": info, "wall_s": check.elapsed(),
              "only": sorted(only) if args.only or args.part else None,
              "rows": check.rows}
    (out / "check.json").write_text(json.dumps(record, indent=1) + "\n")
    with tarfile.open(out / "logs.tgz", "w:gz") as tar:
        tar.add(check.logs, arcname="logs")
        for extra in ("pipe", "pipe_work"):
            if (check.work / extra).is_dir():
                tar.add(check.work / extra, arcname=extra, filter=lambda t: None if t.name.endswith(".pt") else t)
    return gpu_check_table.main([str(out / "check.json")])


if __name__ == "__main__":
    sys.exit(main())
