"""Plain PyTorch BERT-large, no harness: the reference the harness's bert_large is held to on a GPU.

    python scripts/tools/plain_bert.py                                   # 24 x 1024, seq 512, batch 32, fp16
    python scripts/tools/plain_bert.py --layers 2 --hidden 64 --heads 2 --seq 32 --batch 4 --vocab 1000 \
        --device cpu --precision fp32 --warmup 1 --steps 2 --repeats 2  # the test's tiny shape

What "plain" means here (the issue's figure, 236 seq/s on one H200, was taken this way):
torch.nn.TransformerEncoder layers (post-LayerNorm, GELU, batch first), word + position + segment
embeddings, masked LM over every token through a tied decoder (no gather of masked positions), no
next-sentence head, AdamW (fused on CUDA), fp16 autocast with a gradient scaler, random tokens made
once on the device. The harness's counterpart in the same device call:

    python -m harness.train model=bert_large mode=throughput precision=amp model.workload=pretrain512 \
        model.max_predictions=512 model.batch_size=32

Prints one JSON line: sequences/s as the median of --repeats windows of --steps steps (after
--warmup steps), each window closed by a device synchronisation.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from timing import add_window_arguments, timed_windows

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO); what is timed
# uses nothing of the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402


class PlainBert(nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, seq: int):
        super().__init__()
        self.word, self.position, self.segment = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden), nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.1, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.transform, self.transform_norm = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, tokens: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        x = self.word(tokens) + self.position.weight[None, : tokens.shape[1]] + self.segment(segments)
        h = self.encoder(F.dropout(self.norm(x), 0.1, self.training))
        logits = F.linear(self.transform_norm(F.gelu(self.transform(h))), self.word.weight, self.bias)
        return F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())


def main() -> None:
    p = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=30528)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--precision", choices=["fp16", "bf16", "fp32"], default="fp16")
    p.add_argument("--device", default="cuda")
    add_window_arguments(p, warmup=10, steps=20, repeats=3)
    args = p.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(1)
    model = PlainBert(args.vocab, args.hidden, args.layers, args.heads, args.seq).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": None}[args.precision]
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    tokens = torch.randint(999, args.vocab, (args.batch, args.seq), device=device)
    segments = (torch.arange(args.seq, device=device) >= args.seq // 2).long().expand(args.batch, -1)

    def step() -> int:
        with torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext():
            loss = model(tokens, segments)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return args.batch

    rates = timed_windows(step, device, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
    print(json.dumps({"script": "plain_bert", "layers": args.layers, "hidden": args.hidden, "seq": args.seq,
                      "batch": args.batch, "precision": args.precision, "device": str(device),
                      "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
                      "torch": torch.__version__, "parameters": sum(q.numel() for q in model.parameters()),
                      "sequences_per_s": statistics.median(rates), "windows": rates}))


if __name__ == "__main__":
    main()
