"""Transformer-big at MLPerf's size, and the behaviours its training and decoding rely on."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from harness.config import compose
from harness.run.build import context_for
from reference_models.transformer.beam import beam_search, length_norm
from reference_models.transformer.benchmark import TransformerBenchmark
from reference_models.transformer.model import Transformer
from reference_models.transformer.tokenizer import EOS_ID

# From the reference's model definition (translation/tensorflow/transformer/model), d = 1024, f = 4096,
# V = 33,708, 6 layers per stack:
#   shared embedding and output matrix              V x d                       = 34,516,992
#   encoder layer: q, k, v, output (no bias)        4 d^2                       =  4,194,304
#                  filter and output dense + bias   2 d f + f + d               =  8,393,728
#                  two layer norms (scale, bias)    2 x 2 d                     =      4,096
#   decoder layer: an encoder layer's + encoder-decoder attention 4 d^2 + its layer norm 2 d
#   a final layer norm on each stack                2 d
# = V d + 6 (4d^2 + 2df + f + d + 4d) + 6 (8d^2 + 2df + f + d + 6d) + 4d = 210,804,736.
# NVIDIA's MLPerf v0.7 Transformer logs print "num. model params: 210808832": the same network
# with the vocabulary padded to a multiple of 8 (33,712 rows, 4 x 1024 more).
REFERENCE_PARAMS = 210_804_736
NVIDIA_V07_PARAMS = 210_808_832


def _count(vocab: int) -> int:
    with torch.device("meta"):
        model = Transformer(vocab)
    return sum(p.numel() for p in model.parameters())


def test_real_scale_parameter_count_equals_the_reference_definition():
    d, f, v = 1024, 4096, 33708
    by_formula = v * d + 6 * (4 * d * d + 2 * d * f + f + d + 4 * d) + 6 * (8 * d * d + 2 * d * f + f + d + 6 * d) + 4 * d
    assert by_formula == REFERENCE_PARAMS == _count(33708)
    assert _count(33712) == NVIDIA_V07_PARAMS


def test_mode_throughput_with_the_real_config_builds_the_real_model():
    cfg = compose(["model=transformer", "dataset=wmt17", "mode=throughput", "device=cpu", "seed=1"])
    bench = TransformerBenchmark(context_for(cfg, device=torch.device("meta")))
    assert sum(p.numel() for p in bench.model.parameters()) == REFERENCE_PARAMS
    hyper = bench.hyperparameters()
    assert hyper["opt_adam_beta_2"] == 0.997 and hyper["opt_adam_epsilon"] == 1e-9
    assert hyper["opt_base_learning_rate"] == pytest.approx(2.0 * (1024 * 16000) ** -0.5)
    assert len(bench.model.encoder) == len(bench.model.decoder) == 6 and bench.model.d == 1024


def _tiny(seed: int = 0, vocab: int = 23) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(vocab, d=16, layers=2, heads=2, ffn=32, dropout=0.0, attention_dropout=0.0,
                       relu_dropout=0.0).eval()


def test_padding_does_not_change_a_sentences_logits():
    model = _tiny()
    short, long = torch.randint(2, 23, (1, 4)), torch.randint(2, 23, (1, 7))
    tgt = torch.randint(2, 23, (2, 5))
    src = torch.cat((long, torch.cat((short, torch.zeros(1, 3, dtype=torch.long)), dim=1)))
    together = model(src, tgt, src == 0)
    alone = model(short, tgt[1:])
    torch.testing.assert_close(together[1], alone[0], rtol=1e-5, atol=1e-5)


def test_a_target_token_sees_only_the_tokens_before_it():
    model = _tiny()
    src, tgt = torch.randint(2, 23, (1, 6)), torch.randint(2, 23, (1, 5))
    changed = tgt.clone()
    changed[0, 3] = (tgt[0, 3] + 1) % 23
    a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :4], b[:, :4])  # logits up to position 3 predict tokens 0..3
    assert not torch.allclose(a[:, 4], b[:, 4])


def test_decoding_step_by_step_gives_the_teacher_forced_logits():
    model = _tiny()
    src, tgt = torch.randint(2, 23, (2, 6)), torch.randint(2, 23, (2, 5))
    full = model(src, tgt)
    memory, caches = model.memory(model.encode(src, None)), [{} for _ in model.decoder]
    previous = torch.zeros(2, dtype=torch.long)  # decoding starts from id 0, the zero vector
    for i in range(5):
        torch.testing.assert_close(model.step(previous, i, memory, None, caches), full[:, i], rtol=1e-4, atol=1e-5)
        previous = tgt[:, i]


class _Table:
    """A stand-in model whose next-token log-probabilities depend on (last token, position) only."""

    def __init__(self, logp: torch.Tensor):
        self.logp, self.decoder = logp, []

    def encode(self, src, src_pad):
        return src

    def memory(self, encoded):
        return []

    def key_mask(self, src_pad):
        return None

    def step(self, ids, position, memory, mask, caches):
        return self.logp[position, ids]


def test_a_wide_beam_finds_the_best_length_normalised_translation():
    """With a beam wider than the number of live hypotheses the search is exhaustive, so it must
    return the sequence of best log-probability / ((5 + length) / 6) ** 0.6 among those ending in EOS."""
    vocab, steps = 4, 4
    for seed in range(5):
        torch.manual_seed(seed)
        logp = torch.log_softmax(torch.randn(steps, vocab, vocab) * 2, dim=-1)
        best, best_score = None, -math.inf
        for length in range(1, steps + 1):
            for body in itertools.product([t for t in range(vocab) if t != EOS_ID], repeat=length - 1):
                seq, last, total = [*body, EOS_ID], 0, 0.0
                for pos, token in enumerate(seq):
                    total += float(logp[pos, last, token])
                    last = token
                score = total / length_norm(0.6, length)
                if score > best_score:
                    best, best_score = list(body), score
        got = beam_search(_Table(logp), torch.zeros(1, 1, dtype=torch.long), None, beam=64, extra_length=steps - 1)
        assert got == [best]


def test_beam_search_decodes_each_sentence_as_it_would_alone():
    model = _tiny(1)
    src = torch.randint(2, 23, (3, 6))
    src[2, 4:] = 0
    out = beam_search(model, src, src == 0, beam=4, extra_length=5)
    assert len(out) == 3 and all(len(h) <= 6 + 5 and EOS_ID not in h for h in out)
    assert out[2] == beam_search(model, src[2:, :4], None, beam=4, extra_length=7)[0]
