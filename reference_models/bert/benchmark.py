"""BERT plugged into the harness as a throughput-only model: a synthetic batch of the workload's shape
(SQuAD spans, or masked positions and next-sentence labels), counted in sequences.

    python -m harness.train model=bert_large mode=throughput precision=amp
    python -m harness.train model=bert_base mode=throughput precision=amp model.workload=pretrain128 model.batch_size=64
"""
from __future__ import annotations

from typing import Any

import torch

from harness.interface import RunContext
from reference_models.bert.model import BertEncoder, BertForPreTraining, BertForQuestionAnswering, init_weights
from reference_models.bert.options import BertOptions, FIRST_WORDPIECE, workload_shape
from reference_models.synthetic import SyntheticBenchmark, adam


def padded(vocab: int, multiple: int) -> int:
    return -(-vocab // max(multiple, 1)) * max(multiple, 1)


def shape_of(hp) -> tuple[str, int, str, int]:
    """(workload, sequence length, head, masked positions) after the options' overrides (held to
    their bounds with the config: BertOptions.relations)."""
    return (str(hp.workload), *workload_shape(hp.workload, hp.seq_len, hp.max_predictions))


def build_model(hp, head: str) -> torch.nn.Module:
    encoder = BertEncoder(padded(hp.vocab_size, hp.pad_vocab_to), hp.hidden_size, hp.num_layers, hp.num_heads,
                          hp.intermediate_size, positions=hp.max_position_embeddings, types=hp.type_vocab_size,
                          dropout=hp.dropout, attention_dropout=hp.attention_dropout, eps=hp.layer_norm_eps,
                          pooler=head == "pretrain",  # SQuAD's head never reads the pooler: DDP needs every parameter used
                          half_norms=hp.half_norms)
    model = (BertForPreTraining(encoder, hp.layer_norm_eps, hp.half_norms) if head == "pretrain"
             else BertForQuestionAnswering(encoder))
    init_weights(model, hp.initializer_range)
    return model


class BertBenchmark(SyntheticBenchmark):
    def __init__(self, ctx: RunContext[BertOptions]):
        hp = ctx.options
        workload, self.seq, self.head, self.predictions = shape_of(hp)
        super().__init__(ctx, workload)
        self.model = build_model(hp, self.head).to(ctx.device)
        # layer by layer: the 24 (or 12) layers share one compiled graph, so compilation costs one
        # layer's time instead of the whole model's, and each layer's bias + GELU and dropout +
        # residual + LayerNorm still fuse
        encoder: BertEncoder = self.model.bert  # type: ignore[assignment]  # both heads hold one
        self.compile_if_asked(list(encoder.layers))
        self.optimizer = adam(self.model, ctx.device, hp.learning_rate, (hp.adam_beta1, hp.adam_beta2), hp.adam_eps,
                              hp.weight_decay)
        self.grad_clip_norm = hp.grad_clip
        self.batch = self._batch()

    def _batch(self) -> dict[str, torch.Tensor]:
        """One batch of the workload's shape. Every sequence fills its positions: a padded batch costs
        the same dense compute, and with no mask attention may take its fastest kernel."""
        b, s, gen, dev = int(self.hp.batch_size), self.seq, self.generator, self.device

        def ints(high: int, *shape: int, low: int = 0) -> torch.Tensor:
            return torch.randint(low, high, shape, generator=gen, device=dev)

        tokens = ints(self.hp.vocab_size, b, s, low=FIRST_WORDPIECE)
        # [CLS] question [SEP] context [SEP]: segment 1 from a drawn split point on
        split = ints(s // 2, b, 1, low=1)
        token_types = (torch.arange(s, device=dev)[None] >= split).long()
        if self.head == "squad":
            start = ints(s - 1, b, low=1)
            return {"tokens": tokens, "token_types": token_types, "start": start,
                    "end": torch.minimum(start + ints(30, b), torch.full_like(start, s - 1))}
        positions = torch.rand(b, s, generator=gen, device=dev).argsort(1)[:, :self.predictions].sort(1).values
        return {"tokens": tokens, "token_types": token_types, "positions": positions,
                "labels": tokens.gather(1, positions), "next_sentence": ints(2, b)}

    def loss(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        return model(**batch), batch["tokens"].shape[0]

    def hyperparameters(self) -> dict[str, Any]:
        extra = {"max_sequence_length": self.seq}
        if self.head == "pretrain":
            extra["max_predictions_per_seq"] = self.predictions
        return {**super().hyperparameters(), **extra}
