"""Beam search as MLPerf's GNMT reference decodes (seq2seq/inference/beam_search.py).

Beam 5; a hypothesis's score is the sum of its tokens' log-probabilities; when every beam has
ended, scores are divided by the length normalisation ((c + len) / (c + 1)) ** alpha with c = 5,
alpha = 0.6 and len counted from 1, and the coverage penalty beta * sum_src log(min(attention
mass, 1)) is added (beta = 0.1; source positions never attended add 0). Finished hypotheses carry
their score unchanged while the others go on.
"""
from __future__ import annotations

import torch

from reference_models.gnmt.model import GNMT
from reference_models.gnmt.tokenizer import BOS_ID, EOS_ID


@torch.no_grad()
def beam_search(
    model: GNMT,
    src: torch.Tensor,
    src_len: torch.Tensor,
    *,
    beam: int = 5,
    max_len: int = 150,
    len_norm_factor: float = 0.6,
    len_norm_const: float = 5.0,
    cov_penalty_factor: float = 0.1,
) -> list[list[int]]:
    """The best hypothesis per sentence of src (T, B), as token ids without BOS, up to EOS."""
    device = src.device
    batch = src.shape[1]
    n = batch * beam
    memory, projected, pad_mask = model.encode(src, src_len)
    memory = memory.repeat_interleave(beam, dim=1)
    projected = projected.repeat_interleave(beam, dim=1)
    pad_mask = pad_mask.repeat_interleave(beam, dim=0)

    words = torch.full((1, n), BOS_ID, dtype=torch.long, device=device)
    scores = torch.zeros(batch, beam, device=device)
    scores[:, 1:] = float("-inf")  # at the start every beam of a sentence is the same: keep one
    scores = scores.view(-1)
    finished = torch.zeros(n, dtype=torch.bool, device=device)
    lengths = torch.ones(n, dtype=torch.long, device=device)
    coverage = torch.zeros(n, memory.shape[0], device=device)
    base = (torch.arange(batch, device=device) * beam)[:, None]
    state = None
    steps_words: list[torch.Tensor] = []
    steps_origin: list[torch.Tensor] = []

    for _ in range(max_len - 1):
        logits, attention, state = model.decoder(words, memory, projected, pad_mask, state)
        logp = torch.log_softmax(logits[0].float(), dim=-1)
        vocab = logp.shape[1]
        if finished.any():
            # an ended hypothesis can only continue with EOS at no cost: it keeps its score and one slot
            ended = torch.full((vocab,), float("-inf"), device=device)
            ended[EOS_ID] = 0.0
            logp = torch.where(finished[:, None], ended, logp)
        top_scores, top = (scores[:, None] + logp).view(batch, beam * vocab).topk(beam, dim=1)
        origin = (base + top // vocab).view(-1)
        word = (top % vocab).view(-1)

        state = [(h[:, origin], c[:, origin]) for h, c in state]
        was_finished = finished[origin]
        live = (~was_finished).float()
        coverage = coverage[origin] + attention[0][origin].float() * live[:, None]
        lengths = lengths[origin] + (~was_finished).long()
        finished = was_finished | (word == EOS_ID)
        scores = top_scores.view(-1)
        steps_words.append(word)
        steps_origin.append(origin)
        words = word[None, :]
        if bool(finished.all()):  # sync point: one per decoding step, as the reference has
            break

    norm = ((len_norm_const + lengths.float()) / (len_norm_const + 1.0)) ** len_norm_factor
    cov = torch.log(coverage.clamp(max=1.0))
    cov = torch.where(torch.isfinite(cov), cov, torch.zeros_like(cov)).sum(dim=1)
    final = scores / norm + cov_penalty_factor * cov
    best = (base[:, 0] + final.view(batch, beam).argmax(dim=1))

    tokens = []
    idx = best
    for word, origin in zip(reversed(steps_words), reversed(steps_origin)):
        tokens.append(word[idx])
        idx = origin[idx]
    seqs = torch.stack(tokens[::-1], dim=1).tolist() if tokens else [[] for _ in range(batch)]
    out = []
    for seq in seqs:
        out.append(seq[: seq.index(EOS_ID)] if EOS_ID in seq else seq)
    return out
