"""The plain PyTorch Transformer-big that `mode=throughput` is measured against, at the same batch.

    python scripts/tools/transformer_baseline.py                       # one GPU, fp16 autocast, 128 x (64 + 64) tokens
    python scripts/tools/transformer_baseline.py --device cpu --precision fp32 --batch 4 --src-len 8 --tgt-len 8 \
        --d-model 32 --heads 2 --ffn 64 --layers 1 --vocab 100 --warmup 1 --steps 3 --repeats 2   # a CPU check

What anyone would write from the PyTorch documentation: torch.nn.Transformer (d_model 1024, 16 heads,
6 + 6 layers, FFN 4096, dropout 0.1, pre-norm as the MLPerf reference, batch-first), one nn.Embedding
for source and target scaled by sqrt(d_model) with sinusoidal positions added, an output nn.Linear
tied to that embedding, the causal mask from nn.Transformer.generate_square_subsequent_mask,
cross-entropy with label smoothing 0.1, torch.optim.Adam (betas 0.9/0.997, eps 1e-9, its default
implementation), fp16 autocast with a GradScaler and fp32 weights. Random tokens, no padding.
Throughput counts source + target tokens of every step, as `mode=throughput` counts them: after
--warmup steps, --repeats windows of --steps steps, each timed between two device synchronisations;
the median window is the figure. One JSON line on stdout.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

from timing import add_window_arguments, timed_windows

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO); what is timed
# uses nothing of the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402


class PlainTransformer(nn.Module):
    positions: torch.Tensor  # a registered buffer, which nn.Module's __getattr__ types as a Tensor or a Module

    def __init__(self, vocab: int, d: int, heads: int, layers: int, ffn: int, dropout: float):
        super().__init__()
        self.d = d
        self.embedding = nn.Embedding(vocab, d)
        # pre-norm layers cannot take the nested-tensor inference path; nn.Transformer warns of it at every build
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        self.transformer = nn.Transformer(d, heads, layers, layers, ffn, dropout, batch_first=True, norm_first=True)
        self.out = nn.Linear(d, vocab, bias=False)
        self.out.weight = self.embedding.weight
        position = torch.arange(1024)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(1e4) / d))
        self.register_buffer("positions", torch.cat((position.sin(), position.cos()), dim=1))

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.d)
        s = self.embedding(src) * scale + self.positions[: src.shape[1]]
        t = self.embedding(tgt_in) * scale + self.positions[: tgt_in.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
        return self.out(self.transformer(s, t, tgt_mask=mask, tgt_is_causal=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--precision", choices=("amp", "fp32"), default="amp", help="amp: fp16 autocast + GradScaler")
    parser.add_argument("--batch", type=int, default=128, help="sentences per step")
    parser.add_argument("--src-len", type=int, default=64)
    parser.add_argument("--tgt-len", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=33708)
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--ffn", type=int, default=4096)
    add_window_arguments(parser, warmup=20, steps=50, repeats=5)
    args = parser.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(0)
    model = PlainTransformer(args.vocab, args.d_model, args.heads, args.layers, args.ffn, 0.1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.997), eps=1e-9)
    amp = args.precision == "amp"
    scaler = torch.amp.GradScaler(device.type, enabled=amp)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    src = torch.randint(2, args.vocab, (args.batch, args.src_len), device=device)
    tgt = torch.randint(2, args.vocab, (args.batch, args.tgt_len + 1), device=device)
    tokens = args.batch * (args.src_len + args.tgt_len)

    def step() -> int:
        with torch.autocast(device.type, dtype=torch.float16, enabled=amp):
            logits = model(src, tgt[:, :-1])
            loss = loss_fn(logits.reshape(-1, args.vocab), tgt[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return tokens

    rates = timed_windows(step, device, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
    print(json.dumps({
        "model": "nn.Transformer", "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "precision": args.precision, "batch": f"{args.batch} x ({args.src_len} + {args.tgt_len}) tokens",
        "params": sum(p.numel() for p in model.parameters()), "tokens_per_s": statistics.median(rates),
        "windows": rates, "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
