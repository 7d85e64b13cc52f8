"""Tacotron 2 at NVIDIA's LJSpeech scale (parameter count) and its batches of LJSpeech's shape."""
from __future__ import annotations

import torch

from harness.config import compose
from harness.run.build import build_run, context_for
from reference_models.tacotron2.model import Tacotron2


def tacotron2_params(symbols=148, emb=512, enc=512, k=5, mel=80, prenet=256, att_rnn=1024, att=128, filters=32,
                     att_k=31, dec=1024, post=512, post_n=5) -> int:
    """From the module shapes of NVIDIA's tacotron2/model.py: the symbol embedding; 3 encoder
    convolutions with BatchNorm; the bidirectional LSTM (enc/2 each way); the bias-free pre-net;
    the attention LSTM cell; query, memory, v and the location convolution and dense layer (no
    biases); the decoder LSTM cell; the mel projection and the gate; 5 post-net convolutions with
    BatchNorm. About 28.2M at the reference's values."""
    lstm_dir = 4 * (enc // 2) * (enc + enc // 2) + 8 * (enc // 2)
    encoder = 3 * (enc * enc * k + enc + 2 * enc) + 2 * lstm_dir
    cell = lambda i, h: 4 * h * (i + h) + 8 * h  # noqa: E731
    attention = att_rnn * att + enc * att + att + 2 * filters * att_k + filters * att
    decoder = (mel * prenet + prenet * prenet + cell(prenet + enc, att_rnn) + attention + cell(att_rnn + enc, dec)
               + (dec + enc) * mel + mel + (dec + enc) + 1)
    widths = [mel] + [post] * (post_n - 1) + [mel]
    postnet = sum(a * b * k + b + 2 * b for a, b in zip(widths, widths[1:]))
    return symbols * emb + encoder + decoder + postnet


def test_nvidias_tacotron2_has_its_28_2m_parameters():
    assert tacotron2_params() == 28_193_153
    cfg = compose(["model=tacotron2", "mode=throughput"])
    with torch.device("meta"):
        model = Tacotron2(cfg.model)
    assert sum(p.numel() for p in model.parameters()) == 28_193_153
    assert (cfg.model.batch_size, cfg.model.n_mel_channels, cfg.model.utterances.mel_max) == (128, 80, 870)


def test_a_batch_has_ljspeech_shapes_sorted_longest_text_first_and_counts_real_frames(tmp_path):
    cfg = compose(["model=tacotron2", "+debug=tacotron2", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}", "model.batch_size=6"])
    bench = build_run(cfg, context_for(cfg)).bench
    utterances = bench.synthetic_batch()
    batch = utterances.inputs
    lengths = batch["text_lengths_cpu"].tolist()
    assert lengths == sorted(lengths, reverse=True) and batch["text"].shape == (6, lengths[0])
    frames = batch["gate_target"].shape[1]
    assert batch["mels"].shape == (6, 8, frames) and 8 <= frames <= 30
    per_utterance = ((batch["gate_target"] == 0).sum(1) + 1).tolist()  # the frames up to and with the stop frame
    real = sum(per_utterance)
    assert utterances.frames == real
    for mel, n in zip(batch["mels"], per_utterance):  # padded with silence (zeros) after the utterance
        assert mel[:, n:].abs().sum() == 0 and mel[:, n - 1].abs().sum() > 0
    assert batch["pad_mask"].sum(1).tolist() == [lengths[0] - n for n in lengths]
    loss, counted = bench.loss(bench.model, utterances)
    loss.backward()
    assert torch.isfinite(loss) and counted == real
    assert all(p.grad is not None for p in bench.model.parameters())
