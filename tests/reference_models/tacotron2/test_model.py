"""Tacotron 2 at NVIDIA's LJSpeech scale (parameter count) and its batches of LJSpeech's shape."""
from __future__ import annotations

import pytest
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


def _previous_attention(att, query, memory, processed_memory, weights_cat, pad_mask):
    """LocationAttention as it was: time-major keys, a convolution then a dense layer, a masked fill."""
    import torch.nn.functional as F

    location = att.location_dense(att.location_conv(weights_cat).transpose(1, 2))
    energies = att.v(torch.tanh(att.query(query)[:, None] + location + processed_memory)).squeeze(-1)
    weights = F.softmax(energies.masked_fill(pad_mask, float("-inf")), dim=1)
    return torch.bmm(weights[:, None], memory).squeeze(1), weights


def _previous_decoder(dec, memory, mels, pad_mask):
    """The decoder as it was: the mel and gate projections inside the loop, one frame at a time."""
    import torch.nn.functional as F

    b, t_in, _ = memory.shape
    frames = torch.cat([mels.new_zeros(b, mels.shape[1], 1), mels[:, :, :-1]], 2).permute(2, 0, 1)
    for layer in dec.prenet:
        frames = F.dropout(F.relu(layer(frames)), 0.5, True)
    zeros = memory.new_zeros
    ah, ac = zeros(b, dec.o.attention_rnn_dim), zeros(b, dec.o.attention_rnn_dim)
    dh, dc = zeros(b, dec.o.decoder_rnn_dim), zeros(b, dec.o.decoder_rnn_dim)
    weights, cumulative = zeros(b, t_in, dtype=torch.float32), zeros(b, t_in, dtype=torch.float32)
    context = zeros(b, memory.shape[2])
    processed = dec.attention.memory(memory)
    mel_out, gate_out = [], []
    for frame in frames:
        ah, ac = dec.attention_rnn(torch.cat([frame, context], -1), (ah, ac))
        ah = F.dropout(ah, dec.o.p_attention_dropout, dec.training)
        context, weights = _previous_attention(dec.attention, ah, memory, processed,
                                               torch.stack([weights, cumulative], 1), pad_mask)
        dh, dc = dec.decoder_rnn(torch.cat([ah, context], -1), (dh, dc))
        dh = F.dropout(dh, dec.o.p_decoder_dropout, dec.training)
        out = torch.cat([dh, context], -1)
        mel_out.append(dec.projection(out))
        gate_out.append(dec.gate(out).squeeze(1))
        cumulative = cumulative + weights
    return torch.stack(mel_out, 2), torch.stack(gate_out, 1)


def _loss_and_grads(model, inputs, decoder=None):
    import torch.nn.functional as F

    torch.manual_seed(7)  # the dropout masks: both versions draw them in the same order
    model.zero_grad(set_to_none=True)
    if decoder is None:
        loss = model(**inputs)
    else:
        memory = model.encoder(model.embedding(inputs["text"]).transpose(1, 2), inputs["text_lengths_cpu"])
        mel, gate = decoder(model.decoder, memory, inputs["mels"], inputs["pad_mask"])
        post = mel + model.postnet(mel)
        mels = inputs["mels"]
        loss = (F.mse_loss(mel, mels) + F.mse_loss(post, mels)
                + F.binary_cross_entropy_with_logits(gate, inputs["gate_target"]))
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_the_decoder_computes_what_the_previous_frame_by_frame_implementation_did(tmp_path):
    """The mel and gate projections taken over every frame at once, after the loop; the attention
    channels first, the location features' convolution and dense layer as one convolution, the padding
    an additive mask in the energies' matmul: on a fixed batch, with dropout on, the
    loss equals the previous implementation's to 1e-6 relative and every gradient to 1e-4 of its
    largest element (float32 sums in another order), at the debug preset and at a wider model over
    longer utterances."""
    for extra in ([], ["model.encoder_embedding_dim=64", "model.symbols_embedding_dim=64", "model.attention_rnn_dim=96",
                       "model.decoder_rnn_dim=96", "model.attention_dim=32", "model.n_mel_channels=20",
                       "model.utterances.mel_mean=60", "model.utterances.mel_max=80"]):
        cfg = compose(["model=tacotron2", "+debug=tacotron2", "mode=throughput", "device=cpu", "seed=1",
                       f"output_root={tmp_path}", "model.batch_size=5", *extra])
        bench = build_run(cfg, context_for(cfg)).bench
        inputs = bench.synthetic_batch().inputs
        bench.model.train()
        loss, grads = _loss_and_grads(bench.model, inputs)
        before, before_grads = _loss_and_grads(bench.model, inputs, decoder=_previous_decoder)
        assert float(loss) == pytest.approx(float(before), rel=1e-6)
        for name, grad in grads.items():  # to 1e-4 of the gradient's largest element (1e-6 for one of about 0)
            want = before_grads[name]
            assert (grad - want).abs().max() <= 1e-4 * want.abs().max() + 1e-6, name


def test_under_fp16_autocast_the_decoder_is_as_close_to_float32_as_the_previous_one(tmp_path):
    """amp's numerics kept: under fp16 autocast (on the CPU here, as amp runs it on a GPU) the loss and
    gradients of a fixed batch stand as near the float32 figures as the previous implementation's do
    (within twice its error; the float32 softmax now reads the fp16 energies itself)."""
    cfg = compose(["model=tacotron2", "+debug=tacotron2", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}", "model.batch_size=5"])
    bench = build_run(cfg, context_for(cfg)).bench
    inputs = bench.synthetic_batch().inputs
    bench.model.train()
    ref, ref_grads = _loss_and_grads(bench.model, inputs, decoder=_previous_decoder)
    with torch.autocast("cpu", dtype=torch.float16):
        loss, grads = _loss_and_grads(bench.model, inputs)
        before, before_grads = _loss_and_grads(bench.model, inputs, decoder=_previous_decoder)
    assert abs(float(loss) - float(ref)) <= 2 * abs(float(before) - float(ref)) + 1e-4 * float(ref)

    def median_error(g: dict) -> float:
        errors = sorted(float((g[n] - ref_grads[n]).abs().max() / ref_grads[n].abs().max())
                        for n in g if ref_grads[n].abs().max() > 1e-4)  # not the batch-normed biases' ~0
        return errors[len(errors) // 2]

    assert median_error(grads) <= 2 * median_error(before_grads) + 1e-3
