"""The embedded dataset's base model: a small Llama 2-shaped decoder trained from scratch on generated
reports (next-token cross-entropy, AdamW, a cosine rate), then written as a Hugging Face Llama folder, as
the reference's base is Llama 2 pretrained by Meta. generate.py calls it once, when it writes the dataset.

    python -m reference_models.llama2_70b_lora.generate OUT_DIR --pretrain-steps 100
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from reference_models.llama.model import Llama, LlamaShape
from reference_models.llama2_70b_lora.checkpoint import save_base

if TYPE_CHECKING:
    from reference_models.llama2_70b_lora.generate import CorpusSpec

log = logging.getLogger(__name__)


def pretrain(spec: CorpusSpec, vocab_size: int, corpus: np.ndarray, out_dir: Path) -> Llama:
    """Train on rows of `corpus` (int64, (rows, seq_len)) for spec.pretrain_steps steps and write the
    model to out_dir; the same spec gives the same draws (seeded generators, no other randomness)."""
    shape = LlamaShape(vocab_size=vocab_size, dim=spec.dim, layers=spec.layers, heads=spec.heads,
                       kv_heads=spec.kv_heads, ffn_dim=spec.ffn_dim, max_seq_len=spec.seq_len, rope_theta=10000.0,
                       rope_scaling=None, fused_qkv=True)
    gen = torch.Generator().manual_seed(spec.seed)
    with torch.random.fork_rng(devices=[]):  # the caller's global random state is left as it was
        torch.manual_seed(spec.seed)
        model = Llama(shape)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.pretrain_lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, spec.pretrain_steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / spec.pretrain_steps)))))
    rows = torch.from_numpy(corpus)
    for step in range(spec.pretrain_steps):
        batch = rows[torch.randint(len(rows), (spec.pretrain_batch,), generator=gen)]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == spec.pretrain_steps - 1:
            log.info("pretraining the base: step %d/%d, loss %.3f", step + 1, spec.pretrain_steps, loss.item())
    save_base(model, shape, out_dir)
    return model
