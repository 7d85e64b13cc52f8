"""Beam search as MLPerf's Transformer reference decodes (model/beam_search.py, Tensor2Tensor's).

Beam 4, alpha 0.6, at most (padded source length + 50) steps, starting from id 0. Each step grows
every live hypothesis by every token and keeps the 2 x beam best by log-probability; of those, the
best `beam` that did not just emit EOS stay alive, and the ones that did join the finished set,
scored log-probability / ((5 + length) / 6) ** alpha, which keeps its best `beam`. The search stops
at the length limit or once, for every sentence, the worst finished score beats the best live
log-probability normalised at the length limit (no live hypothesis can still win). The answer is
the best finished hypothesis (the best live one if none finished), cut before its EOS.
"""
from __future__ import annotations

from typing import Optional

import torch

from reference_models.transformer.model import Transformer
from reference_models.transformer.tokenizer import EOS_ID

INF = 1.0e7  # the reference's "infinity": finite, so that 0 x INF stays 0


def length_norm(alpha: float, length: int) -> float:
    return ((5.0 + length) / 6.0) ** alpha


def _gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """x (B, M, ...) at per-sentence beam indices idx (B, K) -> (B, K, ...)."""
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand(*idx.shape, *x.shape[2:]))


def _searching(step: int, max_len: int, alive_lp: torch.Tensor, fin_scores: torch.Tensor,
               fin_flags: torch.Tensor, alpha: float) -> bool:
    if step >= max_len:
        return False
    best_alive = alive_lp[:, 0] / length_norm(alpha, max_len)
    lowest_finished = (fin_scores * fin_flags).min(dim=1).values - (~fin_flags.any(dim=1)).float() * INF
    return not bool((lowest_finished > best_alive).all())  # sync point: one per decoding step


@torch.no_grad()
def beam_search(model: Transformer, src: torch.Tensor, src_pad: Optional[torch.Tensor], *, beam: int = 4,
                alpha: float = 0.6, extra_length: int = 50) -> list[list[int]]:
    """The best translation of each sentence of src (B, S) as token ids, without its EOS."""
    batch, device = src.shape[0], src.device
    max_len = src.shape[1] + extra_length
    memory = [(k.repeat_interleave(beam, 0), v.repeat_interleave(beam, 0))
              for k, v in model.memory(model.encode(src, src_pad))]
    mask = model.key_mask(src_pad)
    mask = None if mask is None else mask.repeat_interleave(beam, 0)
    caches: list[dict] = [{} for _ in model.decoder]

    alive_seq = torch.zeros(batch, beam, 1, dtype=torch.long, device=device)
    alive_lp = torch.full((batch, beam), float("-inf"), device=device)
    alive_lp[:, 0] = 0.0  # one start per sentence: the other beams are copies of it
    fin_seq = torch.zeros_like(alive_seq)
    fin_scores = torch.full((batch, beam), -INF, device=device)
    fin_flags = torch.zeros(batch, beam, dtype=torch.bool, device=device)
    first_beam = (torch.arange(batch, device=device) * beam)[:, None]

    step = 0
    while _searching(step, max_len, alive_lp, fin_scores, fin_flags, alpha):
        logits = model.step(alive_seq[:, :, -1].reshape(-1), step, memory, mask, caches)
        logp = torch.log_softmax(logits.float(), dim=-1)
        vocab = logp.shape[-1]
        logp = logp.view(batch, beam, vocab) + alive_lp[:, :, None]
        top_lp, top = logp.view(batch, beam * vocab).topk(2 * beam, dim=1)
        origin, word = top // vocab, top % vocab
        grown = torch.cat((_gather(alive_seq, origin), word[:, :, None]), dim=2)
        ended = word == EOS_ID

        alive_lp, keep = (top_lp - ended.float() * INF).topk(beam, dim=1)
        alive_seq = _gather(grown, keep)
        rows = (first_beam + _gather(origin, keep)).view(-1)
        for cache in caches:
            cache["k"], cache["v"] = cache["k"][rows], cache["v"][rows]

        scores = top_lp / length_norm(alpha, step + 1) - (~ended).float() * INF
        fin_seq = torch.cat((fin_seq, torch.zeros_like(fin_seq[:, :, :1])), dim=2)
        fin_scores, best = torch.cat((fin_scores, scores), dim=1).topk(beam, dim=1)
        fin_seq = _gather(torch.cat((fin_seq, grown), dim=1), best)
        fin_flags = _gather(torch.cat((fin_flags, ended), dim=1), best)
        step += 1

    chosen = torch.where(fin_flags.any(dim=1)[:, None], fin_seq[:, 0], alive_seq[:, 0])[:, 1:].tolist()
    return [seq[: seq.index(EOS_ID)] if EOS_ID in seq else seq for seq in chosen]
