"""What the GPU check (scripts/lab/gpu_check.py) measures: the throughput cells, the embedded presets,
the compiled cells whose caches phase A warms, the paths before a fix kept beside the default, and the
real-data rows of scripts/lab/pipeline_h200.sh. Run, it prints one cell's harness.train arguments.

    python3 -c "import sys; sys.path.insert(0, 'scripts/lab'); import gpu_check_rows as r; print(list(r.THROUGHPUT))"
    python3 scripts/lab/gpu_check_rows.py dlrm_dcnv2      # a throughput cell's harness.train arguments, one a line
    ROW=gnmt:reductions_grads bash scripts/lab/side_by_side.sh OUT     # that cell in two trees (its header)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

# model -> the overrides of its throughput row: its real dataset's config at the per-GPU batch of the
# MLPerf round it was last in (NVIDIA's submissions; the throughput-only models at their preset's batch)
THROUGHPUT: dict[str, list[str]] = {
    "ncf": ["dataset=ml20m", "model.batch_size=1048576"],
    "resnet": ["dataset=imagenet", "model.batch_size=256"],
    "gnmt": ["dataset=wmt16", "model.batch_size=2048"],
    "transformer": ["dataset=wmt17", "model.batch_size=8192"],
    "ssd": ["dataset=ssd_coco2017", "model.batch_size=128"],
    "maskrcnn": ["dataset=maskrcnn_coco2017", "model.batch_size=8"],
    # the whole Llama 3.1 8B on one H200: fp32 weights, gradients and AdamW's two moments (16 bytes a parameter,
    # 128 GB) and one sequence of 8,192 tokens fit with activation checkpointing (measured 2026-12-02)
    "llama31_8b": ["dataset=c4", "model.batch_size=1", "model.activation_checkpointing=true"],
    # MLPerf's current benchmarks at harness.bench's cells (their ModelSpec's SuiteEntry says why each is so)
    "retinanet": ["dataset=openimages", "model.batch_size=32"],
    "llama2_70b_lora": ["dataset=govreport", "model.layers=16", "model.batch_size=1", "model.activation_checkpointing=true"],
    "dlrm_dcnv2": ["dataset=criteo_1tb_multihot", "model.num_embeddings_per_feature=[2000000,39060,17295,7424,20265,3,"
                   "7122,1543,63,2000000,2000000,405282,10,2209,11938,155,4,976,14,2000000,2000000,2000000,590152,12973,"
                   "108,36]"],
    "bert_large": [], "bert_base": [], "txl_base": [], "txl_large": [], "tacotron2": [], "waveglow": [],
}
# the timed windows of every throughput cell (mode=throughput): seconds, so that a fast and a slow step are measured
# for about as long
WINDOWS = ["warmup_s=1.5", "throughput_window_s=0.75", "throughput_repeats=3"]
# two lanes: the first half, the second (in each part: LATER_CALLS["embedded:<model>"] moves one to a later call)
EMBEDDED = ["resnet", "ssd", "ncf", "transformer", "gnmt", "maskrcnn", "dlrm_dcnv2", "retinanet"]
# the compiled fast paths, compiled once in phase A so that phase B's cells find Inductor's on-disk caches
COMPILED = ["resnet", "transformer", "bert_large", "bert_base", "txl_base", "txl_large"]
# paths measured beside the default (--before): the path before a fix, or a candidate for the default:
# (key, model, overrides, why)
VARIANTS = [("maskrcnn:identity_norms", "maskrcnn", ["model.synthetic.calibrate_norms=false"],
             "the untrained frozen body at identity batch-norm statistics (before the fix)"),
            ("bert_large:fp32_norms", "bert_large", ["model.half_norms=false"],
             "LayerNorms and the residual stream in fp32, as autocast keeps them (the default before 2026-12-05: "
             "0.978x on an H200)"),
            ("resnet:no_graph", "resnet", ["cuda_graph=false"],
             "the compiled step launched kernel by kernel (the default before 2026-12-05: 0.980x the graph on an H100)"),
            ("maskrcnn:eager_mask_head", "maskrcnn", ["model.fixed_mask_rois=false"],
             "the mask head eager on the ROIs sampled (the default before 2026-12-05: 0.78x on an H200)"),
            ("resnet:conv_1x1_as_mm", "resnet", ["model.conv_1x1_as_mm=true"],
             "the forward pass's 1x1 convolutions as cuBLAS matrix products (not the default: 0.998x on an H100, 1.006x on an H200)"),
            ("resnet:native_pool", "resnet", ["model.stem_pool=native"],
             "the stem's max-pool as torch's, compiled by Inductor (the default before 2026-12-07: 0.990x the Triton "
             "kernels' step on an H100)"),
            ("resnet:master_weights", "resnet", ["master_weights=true"],
             "fp16 weights with fp32 copies in the optimizer, no casts of the weights each step (not the "
             "default: 0.992x on an H100, 1.009x on an H200)"),
            ("bert_large:fp8", "bert_large", ["fp8=true"],
             "the linear layers' products in fp8 (torchao's Float8Linear, tensorwise scales), as MLPerf's H100 and "
             "H200 BERT submissions run theirs (not the default: 0.90x on an H100, its casts cost more than they save)"),
            ("gnmt:reductions_grads", "gnmt", ["model.attention_grads=reductions"],
             "the attention scores' gradients from two compiled reductions that each recompute tanh, where the "
             "default's one Triton kernel computes it once (the default before 2026-12-07: 0.94x and 0.96x on an H100)"),
            ("llama31_8b:fp8", "llama31_8b", ["fp8=true"],
             "the linear layers' products in fp8, as the MLPerf reference trains (a candidate: 1.24x the default on "
             "an H200 on 2026-12-06; it does not fit an H100)")]
# the throughput cells (a model, or a variant's key) of the check's later calls (gpu_check.py --part 2 or 3); the rest
# go in part 1. On one H200 part 1 (tests, embedded presets, the other cells) took 527 s; part 2's real rows in 40-step
# windows after a warm pass took 300 s for five of them (2026-12-02 16:49); part 3 holds MLPerf's current benchmarks,
# whose cells start large models, TXL-large, whose compile takes two minutes, and since 2026-12-04 TXL-base and
# Tacotron 2: on a slower lease that day part 1's tests ran past phase A and its last cell past phase B (546 s), where
# part 3 took 106-185 s
LATER_CALLS = {"waveglow": 2, "maskrcnn:identity_norms": 2, "txl_large": 3, "txl_base": 3, "tacotron2": 3,
               "llama31_8b": 3, "llama31_8b:fp8": 3, "retinanet": 3, "llama2_70b_lora": 3, "dlrm_dcnv2": 3,
               # their presets in mode=train on the fast path: DLRM 35 s, RetinaNet 13 epochs in 154 s (2026-12-03)
               "embedded:dlrm_dcnv2": 3, "embedded:retinanet": 3}
# the GPU memory a throughput cell needs, in GiB: on a smaller card its row is "not run", with why. Llama 3.1 8B at
# batch 1 with activation checkpointing, on one GPU (its parameters, gradients and AdamW moments unsharded), ran
# out of memory on an H100's 79 GiB, default and fp8 alike (2026-12-06), and fits the H200's 139 GiB
GPU_GIB = {"llama31_8b": 100}
# rows whose figure moves more than the table's 5% between processes on one H200 with the same code, and the
# tolerance each is held to instead: the launch-bound detection steps (MFU 7-10%). On the lent machines,
# 2026-12-03: Mask R-CNN b8 59, 61.5, 63, 64, 65 and 67 images/s (61.5 and 67 from this tree, 63 and 64 from
# the tree before, alternated in one call), 68 on 2026-12-02; RetinaNet b32 71, 74 and 82: lowest over highest 0.87
# the Transformer's real-data row (2026-12-02 and 03, 8 processes; trees 4215650 and f3ee95d alternated in one call,
# each on its own dataset and on the other's): held batches 281,459-301,438 tokens/s (lowest over highest 0.934),
# on files 268,718-301,240 (0.892), real / held 0.938-1.027; the held-batch step is the same code in every tree;
# GNMT's real-data row (mode=train, b512, a step unchanged since 2026-12-02), four processes on 2026-12-02 and 03:
# held batches 419,274-511,415 tokens/s (0.820), on files 430,651-510,732 (0.843), real / held 0.893-1.027 (0.870)
SPREAD = {"real:gnmt:held": 0.18, "real:gnmt:real": 0.16, "real:gnmt:ratio": 0.13,
          "throughput:maskrcnn": 0.12, "throughput:retinanet": 0.12, "real:maskrcnn:nvimgcodec:held": 0.10,
          "real:maskrcnn:nvimgcodec:real": 0.10, "real:maskrcnn:nvimgcodec:ratio": 0.10,
          "real:transformer:held": 0.07, "real:transformer:real": 0.11, "real:transformer:ratio": 0.08}
# pipeline_h200.sh's measurements: the held-batch step beside training on files
# (the paths before a fix last: where the call's deadline cuts the list, the default rows have run)
REAL_DATA = ["transformer", "maskrcnn:nvimgcodec", "ssd:cpu8", "ssd:cpu", "resnet:nvimgcodec", "gnmt", "ncf",
             "transformer:workers", "maskrcnn:canvas", "transformer:auto"]
# a real-data row that measures the path before a fix: shown beside the default, not compared
BEFORE_FIX = {"transformer:workers": "batches padded by 2 DataLoader workers and pinned by the pin thread, whose turns "
                                     "at the interpreter slow the launch-bound step (model.collate_workers=2: before the fix)",
              "transformer:auto": "PyTorch's attention choice (cuDNN's) and batches padded to their longest sentence "
                                  "(before the fix)",
              "maskrcnn:canvas": "each batch padded to a fixed canvas (model.fixed_canvas=true): fewer shapes for cuDNN "
                                 "to plan, more zeros to convolve (the default for a few hours on 2026-12-02)"}


def pipeline_label(name: str) -> str:
    """The label pipeline_h200.sh gives a measurement's row."""
    fixed = {"resnet:nvimgcodec": "resnet nvimgcodec", "ssd:cpu": "ssd cpu", "maskrcnn:nvimgcodec":
             "maskrcnn nvimgcodec grouped", "maskrcnn:cpu": "maskrcnn cpu grouped",
             "transformer:auto": "transformer auto unpadded", "transformer:workers": "transformer workers",
             "maskrcnn:canvas": "maskrcnn nvimgcodec grouped canvas"}
    if name in fixed:
        return fixed[name]
    if name.startswith("ssd:cpu"):
        return f"ssd cpu {name[len('ssd:cpu'):]} workers"
    return name


def cell_args(key: str) -> list[str]:
    """The harness.train arguments of a throughput cell (a model of THROUGHPUT, or a key of VARIANTS beside it)
    as the check runs it, less its output folder; KeyError for an unknown key."""
    variants = {k: (m, o) for k, m, o, _ in VARIANTS}
    model, extra = (key, []) if key in THROUGHPUT else variants[key]
    return throughput_args(model, [*THROUGHPUT[model], *extra], WINDOWS)


def throughput_args(model: str, overrides: list[str], windows: list[str]) -> list[str]:
    """harness.train's arguments for a throughput cell of `model` with these overrides and windows."""
    return [f"model={model}", "mode=throughput", "progress=false", "tensorboard=false", "seed=1", *overrides, *windows]


def main(argv: Optional[list[str]] = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: harness/usage.py under python -OO
    from harness.usage import module_doc

    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("cell", help="a model of THROUGHPUT or a key of VARIANTS (gnmt, gnmt:reductions_grads)")
    args = parser.parse_args(argv)
    try:
        print("\n".join(cell_args(args.cell)))
    except KeyError:
        print(f"gpu_check_rows.py: no throughput cell {args.cell!r}; the cells: "
              + ", ".join([*THROUGHPUT, *(k for k, *_ in VARIANTS)]), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
