"""GNMT v2 at MLPerf's size, and the behaviours its training and decoding rely on."""
from __future__ import annotations

import torch

from reference_models.gnmt.beam import beam_search
from reference_models.gnmt.model import GNMT
from reference_models.gnmt.tokenizer import BOS_ID, EOS_ID, PAD_ID


def test_real_scale_parameter_count_equals_the_mlperf_reference():
    # NVIDIA's MLPerf v0.7 GNMT logs print "Number of parameters: 160671297" for this configuration
    model = GNMT(vocab=32320, hidden=1024, layers=4, dropout=0.2)
    assert sum(p.numel() for p in model.parameters()) == 160_671_297
    assert model.encoder.embedding is model.decoder.embedding  # shared embeddings


def _tiny(seed=0):
    torch.manual_seed(seed)
    return GNMT(vocab=40, hidden=16, layers=4, dropout=0.0).eval()


def test_padding_does_not_change_a_sentences_logits():
    model = _tiny()
    long = torch.randint(4, 40, (7, 1))
    short = torch.randint(4, 40, (4, 1))
    tgt = torch.randint(4, 40, (5, 1))
    batch = torch.cat((long, torch.cat((short, torch.full((3, 1), 0)))), dim=1)
    together = model(batch, torch.tensor([7, 4]), torch.cat((tgt, tgt), dim=1))
    alone = model(short, torch.tensor([4]), tgt)
    torch.testing.assert_close(together[:, 1], alone[:, 0], rtol=1e-5, atol=1e-5)


def test_attention_is_a_distribution_over_real_source_tokens():
    model = _tiny()
    src = torch.randint(4, 40, (6, 2))
    src[3:, 1] = PAD_ID  # a batch's shorter sentence is padded after its end
    memory, projected, pad_mask = model.encode(src, torch.tensor([6, 3]))
    _, weights, _ = model.decoder(torch.full((2, 2), BOS_ID), memory, projected, pad_mask)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2))
    assert weights[:, 1, 3:].abs().max() < 1e-6  # nothing on the second sentence's padding


def _greedy(model, src, src_len, max_len):
    memory, projected, pad_mask = model.encode(src, src_len)
    word, state, out = torch.full((1, 1), BOS_ID), None, []
    for _ in range(max_len - 1):
        logits, _, state = model.decoder(word, memory, projected, pad_mask, state)
        word = logits.argmax(-1)
        if word.item() == EOS_ID:
            break
        out.append(word.item())
    return out


def test_beam_of_one_is_greedy_decoding():
    for seed in range(3):
        model = _tiny(seed)
        src = torch.randint(4, 40, (5, 1))
        got = beam_search(model, src, torch.tensor([5]), beam=1, max_len=12, cov_penalty_factor=0.0)
        assert got == [_greedy(model, src, torch.tensor([5]), 12)]


def test_beam_search_decodes_a_batch_within_the_length_limit():
    model = _tiny()
    src = torch.randint(4, 40, (6, 3))
    src[4:, 2] = 0
    out = beam_search(model, src, torch.tensor([6, 6, 4]), beam=5, max_len=10)
    assert len(out) == 3 and all(len(h) <= 9 and EOS_ID not in h for h in out)
    # each sentence decodes as it would alone
    alone = beam_search(model, src[:4, 2:], torch.tensor([4]), beam=5, max_len=10)
    assert out[2] == alone[0]
