"""Tacotron 2 plugged into the harness as a throughput-only model: batches of LJSpeech's shape (symbol
sequences sorted longest first, padded 80-bin mel targets, stop-token targets), counted in mel frames
as NVIDIA's train.py counts them (the sum of the utterances' frames, padding left out).

    python -m harness.train model=tacotron2 mode=throughput precision=amp
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from harness.interface import RunContext, compile_kwargs
from reference_models.synthetic import SyntheticBenchmark
from reference_models.tacotron2.model import Tacotron2
from reference_models.tacotron2.options import Tacotron2Options

FIRST_SYMBOL = 1  # 0 is padding


def lengths(mean: float, std: float, low: int, high: int, n: int, generator: torch.Generator) -> list[int]:
    """n lengths from a normal distribution clipped to [low, high], as a dataset's lengths spread."""
    cpu = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator,
                                                          device=generator.device).item()))
    drawn = torch.normal(float(mean), float(std), (n,), generator=cpu).round().clamp(low, high)
    return [int(x) for x in drawn]


@dataclass
class Utterances:
    """A batch of utterances: the model's inputs and the mel frames it counts. `text_lengths_cpu`
    stays on the host wherever the batch goes (pack_padded_sequence wants it there)."""

    inputs: dict[str, torch.Tensor]
    frames: int

    def to(self, device: torch.device) -> "Utterances":
        return Utterances({k: v if k == "text_lengths_cpu" else v.to(device, non_blocking=True)
                           for k, v in self.inputs.items()}, self.frames)


class Tacotron2Benchmark(SyntheticBenchmark):
    def __init__(self, ctx: RunContext[Tacotron2Options]):
        hp = ctx.options
        super().__init__(ctx)
        self.model = Tacotron2(hp).to(ctx.device)
        if hp.compile and ctx.device.type == "cuda":
            # one step of the decoder loop, compiled once and called once per frame: its ~30 small
            # kernels (two LSTM cells, the attention) are what bounds this model on a GPU
            self.model.decoder.step = torch.compile(self.model.decoder.step, **compile_kwargs(hp.compile_mode))
        # torch.optim.Adam's weight_decay is the L2 term NVIDIA's train.py uses (not AdamW's)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=hp.learning_rate, weight_decay=hp.weight_decay,
                                          fused=ctx.device.type == "cuda")
        self.grad_clip_norm = hp.grad_clip
        self.batch = self._batch()

    def _batch(self) -> Utterances:
        hp, u, b, dev = self.hp, self.hp.utterances, int(self.hp.batch_size), self.device
        frames = sorted(lengths(u.mel_mean, u.mel_std, u.mel_min, u.mel_max, b, self.generator), reverse=True)
        symbols = [max(2, round(f / u.frames_per_symbol)) for f in frames]  # longest text first, as the collate sorts
        t_in, t_out = symbols[0], frames[0]
        text = torch.randint(FIRST_SYMBOL, hp.n_symbols, (b, t_in), generator=self.generator, device=dev)
        text_lengths = torch.tensor(symbols, device=dev)
        text = text * (torch.arange(t_in, device=dev)[None] < text_lengths[:, None])
        frame_lengths = torch.tensor(frames, device=dev)
        valid = torch.arange(t_out, device=dev)[None] < frame_lengths[:, None]
        mels = torch.randn(b, hp.n_mel_channels, t_out, generator=self.generator, device=dev) * valid[:, None]
        return Utterances({"text": text, "text_lengths_cpu": torch.tensor(symbols), "mels": mels,
                           "pad_mask": ~(torch.arange(t_in, device=dev)[None] < text_lengths[:, None]),
                           # the stop token: 1 from each utterance's last frame on
                           "gate_target": (torch.arange(t_out, device=dev)[None] >= frame_lengths[:, None] - 1).float()},
                          sum(frames))

    def loss(self, model: torch.nn.Module, batch: Utterances) -> tuple[torch.Tensor, int]:
        return model(**batch.inputs), batch.frames

    def hyperparameters(self) -> dict[str, Any]:
        inputs = self.batch.inputs
        return {**super().hyperparameters(), "max_input_symbols": inputs["text"].shape[1],
                "max_mel_frames": inputs["mels"].shape[2], "mel_frames_per_batch": self.batch.frames}
