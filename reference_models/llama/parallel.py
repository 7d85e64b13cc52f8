"""How Llama is spread over ranks and memory, with PyTorch's own parts: FSDP2 (`fully_shard` on each
block, then on the root, as torchtitan applies it), activation checkpointing (`checkpoint_wrapper` on
each block), FSDP's bf16 MixedPrecisionPolicy, and torch.compile per block.

    python -m harness.train model=llama31_8b gpus=2 device=cpu model.fsdp=true model.activation_checkpointing=true

A block may hold frozen parameters beside trainable ones (the LoRA benchmark's base weights and
adapters): FSDP2 shards both and reduces gradients only for the trainable ones.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from reference_models.llama.model import Llama


def checkpoint_blocks(model: Llama) -> None:
    """Each block's activations recomputed in backward instead of kept from the forward pass."""
    for i, block in enumerate(model.layers):
        model.layers[i] = checkpoint_wrapper(block)


def compile_blocks(model: Llama) -> None:
    """Each block compiled in place (its parameter names kept for checkpoints), after activation
    checkpointing wraps it and before FSDP shards it, the order torchtitan applies them in: the blocks are
    one module type, so Dynamo traces one graph and every block reuses it."""
    for block in model.layers:
        block.compile()


def shard(model: Llama, device: torch.device, bf16: bool) -> None:
    """FSDP2 over every rank of the process group: each block a unit (its parameters gathered just before
    it runs and freed after), the embeddings, final norm and output layer the root's. In place: the
    model's parameters become DTensor shards, so its optimizer must be made after this."""
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else MixedPrecisionPolicy()
    for block in model.layers:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)


def decayed(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(matrices and embeddings, which weight decay applies to; the RMSNorm scales, which it skips),
    Megatron's rule: no decay for one-dimensional parameters."""
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    vectors = [p for p in model.parameters() if p.ndim < 2]
    return matrices, vectors
