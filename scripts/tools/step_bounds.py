"""The two bounds on a training step of each real-scale model: FLOPs and bytes, and the throughput
ceilings they set on a GPU's peak figures (defaults: one H200 SXM).

    python scripts/tools/step_bounds.py                                   # both models, the H200 defaults
    python scripts/tools/step_bounds.py --gnmt-batch 512 --ncf-batch 1048576 --tflops 989 --tbps 4.8

Counted from the models' own modules (built on the meta device: no memory, no GPU), so the numbers
follow the code. FLOPs: every matmul at 2 per multiply-add, forward x3 for forward plus backward.
Bytes: a floor, not an estimate: each parameter's Adam update (read p, g, m, v; write p, m, v in
fp32: 28 B) plus reading the fp32 weights in forward and backward and writing their gradient
(12 B), and the activations a step must write once and read back (per LSTM token its output, gates
and cell state; GNMT's logits; NCF's layer outputs), in 2-byte (amp) or 4-byte (fp32) elements.
Whichever bound is larger is the ceiling; measured figures far under both point at latency (small
sequential kernels, the host) rather than at either resource.
"""
from __future__ import annotations

import argparse
import sys
from typing import cast
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from harness.usage import module_doc  # noqa: E402
from reference_models.gnmt.model import GNMT  # noqa: E402
from reference_models.ncf.model import NeuMF  # noqa: E402

ADAM_BYTES, WEIGHT_BYTES = 28, 12


def _lstm_flops_per_token(lstm: nn.LSTM) -> float:
    return sum(2 * p.numel() for name, p in lstm.named_parameters() if name.startswith("weight_"))


def gnmt_bounds(batch: int, src_len: int, tgt_len: int, act_bytes: int, vocab: int = 32320,
                hidden: int = 1024) -> dict:
    with torch.device("meta"):
        model = GNMT(vocab, hidden)
    params = sum(p.numel() for p in model.parameters())
    src, tgt = batch * src_len, batch * tgt_len
    enc = sum(_lstm_flops_per_token(m) for m in model.encoder.modules() if isinstance(m, nn.LSTM))
    dec = sum(_lstm_flops_per_token(m) for m in model.decoder.modules() if isinstance(m, nn.LSTM))
    att = model.decoder.attention
    fwd = (src * (enc + 2 * att.linear_k.weight.numel())
           + tgt * (dec + 2 * att.linear_q.weight.numel() + 2 * model.decoder.classifier.weight.numel())
           + tgt * src_len * 5 * hidden)  # scores (add, tanh, dot) and the context, per query-key pair
    lstm_layers_src = sum(m.num_layers * (2 if m.bidirectional else 1)
                          for m in model.encoder.modules() if isinstance(m, nn.LSTM))
    lstm_layers_tgt = sum(m.num_layers for m in model.decoder.modules() if isinstance(m, nn.LSTM))
    # per LSTM token: output h (written, read, its gradient written, read), 4H gates and the cell
    # state (written, read back in backward)
    per_lstm_token = (4 * hidden + 2 * 4 * hidden + 2 * hidden) * act_bytes
    logits = tgt * vocab * 4 * act_bytes  # written, read by the loss, gradient written, read
    attention = tgt * src_len * hidden * 2 * act_bytes  # tanh(q + k) as materialised, written and read
    activ = per_lstm_token * (src * lstm_layers_src + tgt * lstm_layers_tgt) + logits + attention
    return {"model": "gnmt", "batch": batch, "params": params, "unit": "tokens", "units": src + tgt,
            "flops": 3 * fwd, "bytes": params * (ADAM_BYTES + WEIGHT_BYTES) + activ,
            "bytes_parts": {"params": params * (ADAM_BYTES + WEIGHT_BYTES), "logits": logits,
                            "attention": attention, "lstm": activ - logits - attention}}


def ncf_bounds(batch: int, act_bytes: int, users: int = 138493, items: int = 26744) -> dict:
    with torch.device("meta"):
        model = NeuMF(users, items, factors=64, layers=[256, 256, 128, 64])
    params = sum(p.numel() for p in model.parameters())
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    fwd = batch * (sum(2 * m.weight.numel() for m in linears) + model.mf_user.embedding_dim)
    rows = sum(e.embedding_dim for e in (model.mf_user, model.mf_item, model.mlp_user, model.mlp_item))
    gather = batch * rows * 4 * 2  # fp32 rows read, their gradients scattered back
    widths = [m.out_features for m in linears] + [cast(nn.Linear, model.mlp[0]).in_features, model.mf_user.embedding_dim]
    activ = batch * sum(widths) * 4 * act_bytes  # written, read, gradient written, read
    # dense Adam touches every embedding row every step, whatever the batch drew
    return {"model": "ncf", "batch": batch, "params": params, "unit": "samples", "units": batch,
            "flops": 3 * fwd, "bytes": params * (ADAM_BYTES + WEIGHT_BYTES) + gather + activ,
            "bytes_parts": {"params": params * (ADAM_BYTES + WEIGHT_BYTES), "gather": gather, "activations": activ}}


def describe(b: dict, peaks: list[float], tbps: float) -> str:
    t_bytes = b["bytes"] / (tbps * 1e12)
    parts = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in b["bytes_parts"].items())
    lines = [f"{b['model']} batch {b['batch']:,}: {b['params'] / 1e6:.2f}M params; per step "
             f"{b['flops'] / 1e12:.3f} TFLOP ({b['flops'] / b['units'] / 1e6:.1f} MFLOP per {b['unit'][:-1]}) and "
             f"at least {b['bytes'] / 1e9:.2f} GB ({parts}): {t_bytes * 1e3:.2f} ms at {tbps:g} TB/s"]
    for peak in peaks:
        t_flops = b["flops"] / (peak * 1e12)
        bound = "compute" if t_flops >= t_bytes else "memory"
        lines.append(f"    at {peak:g} TFLOPS: {t_flops * 1e3:.2f} ms of compute, {bound}-bound, ceiling "
                     f"{b['units'] / max(t_flops, t_bytes):,.0f} {b['unit']}/s")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--gnmt-batch", type=int, default=512)
    parser.add_argument("--len", type=int, default=30, help="GNMT source and target length")
    parser.add_argument("--ncf-batch", type=int, default=2 ** 20)
    parser.add_argument("--tflops", type=float, nargs="+", default=[989.0, 494.0, 67.0],
                        help="peak TFLOPS to judge against (H200 SXM dense: fp16/bf16 989, tf32 494, fp32 67)")
    parser.add_argument("--tbps", type=float, default=4.8, help="memory bandwidth, TB/s (H200: 4.8)")
    args = parser.parse_args()
    for act in (2, 4):
        print(f"# {8 * act}-bit activations")
        for b in (gnmt_bounds(args.gnmt_batch, args.len, args.len, act), ncf_bounds(args.ncf_batch, act)):
            print(describe(b, args.tflops, args.tbps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
