"""LoRA adapters on a frozen Llama, written with plain torch (the reference uses Hugging Face peft 0.8.2,
which the harness does not install): each targeted projection W keeps its weight frozen and gains
y = W x + (alpha / r) B A dropout(x), A (r x in) and B (out x r) trainable, A drawn as peft draws it
(Kaiming uniform, a = sqrt(5)) and B zero, so the adapted model starts as the base model.

    python -c "from reference_models.llama2_70b_lora.lora import trainable_count; from reference_models.llama2_70b_lora.model import LLAMA2_70B; print(trainable_count(LLAMA2_70B, 16, ['wqkv', 'wo']))"
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import torch
from torch import nn

from reference_models.llama.model import Llama, LlamaShape


class LoRALinear(nn.Module):
    """A frozen nn.Linear (`base`) and its low-rank update: peft's LoraLayer for one adapter, no bias."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float):
        super().__init__()
        self.base = base
        base.weight.requires_grad_(False)
        device = base.weight.device
        self.lora_a = nn.Linear(base.in_features, rank, bias=False, device=device)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False, device=device)
        self.dropout = nn.Dropout(dropout)
        self.scaling = alpha / rank
        self.reset_adapter()

    @torch.no_grad()
    def reset_adapter(self, generator: Optional[torch.Generator] = None) -> None:
        """A as peft draws it, B zero: the update starts at zero. A is drawn whole on the host (from
        `generator`, else the global one), so a sharded A (FSDP2) holds this rank's rows of the same matrix."""
        if self.lora_a.weight.is_meta:
            return
        a = torch.empty(self.lora_a.weight.shape)
        nn.init.kaiming_uniform_(a, a=math.sqrt(5), generator=generator)
        assign(self.lora_a.weight, a)
        self.lora_b.weight.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.lora_b(self.lora_a(self.dropout(x))) * self.scaling


def assign(param: torch.Tensor, value: torch.Tensor) -> None:
    """Copy a whole tensor into a parameter: a plain one, or this rank's shard of an FSDP2 one (DTensor)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(param, DTensor):
        value = distribute_tensor(value.to(param.device, param.dtype), param.device_mesh, param.placements)
    with torch.no_grad():
        param.copy_(value)


def apply_lora(model: Llama, targets: Sequence[str], rank: int, alpha: float, dropout: float) -> None:
    """Freeze every parameter of `model`, then give each block's attention projections named in `targets`
    (wqkv, wq, wk, wv, wo) an adapter, in place: the adapters are the only trainable parameters."""
    model.requires_grad_(False)
    for block in model.layers:
        attention = block.attention
        for name in targets:
            setattr(attention, name, LoRALinear(getattr(attention, name), rank, alpha, dropout))


def adapters(model: nn.Module) -> list[LoRALinear]:
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


def trainable_count(shape: LlamaShape, rank: int, targets: Sequence[str]) -> int:
    """Adapter parameters of a model of this shape, counted on the meta device: r x (in + out) for each
    targeted projection of each block (peft's print_trainable_parameters)."""
    with torch.device("meta"):
        model = Llama(shape)
        apply_lora(model, targets, rank, 2.0 * rank, 0.0)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
