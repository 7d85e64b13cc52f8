"""Model weights in fp16 or bf16, with fp32 master copies that the optimizer updates.

    python -m harness.train model=gnmt dataset=wmt16 mode=throughput precision=amp master_weights=true

What apex called O2 and the MLPerf GNMT reference ran as `--math fp16`: the model holds its weights
in the low-precision dtype, so autocast has nothing to recast each step and cuDNN's LSTMs find
their packed weights already in fp16 (under plain autocast they are re-cast and re-packed on every
call); the optimizer keeps fp32 copies, so small updates are not rounded away. Each step: backward
gives low-precision gradients, which are copied into the fp32 copies' .grad; the loss scaler, the
gradient clipping and the optimizer work on the fp32 copies; the updated values are copied back.
torch has no built-in for this (torch.amp covers autocast only), hence this file.
"""
from __future__ import annotations

import torch


class MasterWeights:
    """Swaps a built model's parameters for `dtype` and gives its optimizer fp32 copies instead."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, dtype: torch.dtype):
        # state made at build (ResNet's zeroed momentum buffers) moves to the masters, in fp32
        built = {p: optimizer.state.pop(p) for p in list(optimizer.state)}
        self.model_params: list[torch.nn.Parameter] = []
        self.master_params: list[torch.nn.Parameter] = []
        for group in optimizer.param_groups:
            masters = []
            for p in group["params"]:
                master = torch.nn.Parameter(p.detach().clone().float(), requires_grad=p.requires_grad)
                self.model_params.append(p)
                self.master_params.append(master)
                masters.append(master)
                if p in built:
                    optimizer.state[master] = {k: v.float() if torch.is_tensor(v) and v.is_floating_point() else v
                                               for k, v in built[p].items()}
            group["params"] = masters
        # in place: each Parameter object stays the same, so the optimizer's mapping above and any
        # module holding a parameter directly (the LSTMs' packed weights) stay valid
        model.to(dtype)

    @torch.no_grad()
    def grads_to_master(self) -> None:
        """The model's low-precision gradients, in fp32, as the optimizer's gradients."""
        for p, m in zip(self.model_params, self.master_params):
            m.grad = None if p.grad is None else p.grad.to(torch.float32)

    @torch.no_grad()
    def master_to_model(self) -> None:
        """The optimizer's updated fp32 values, rounded into the model's weights."""
        torch._foreach_copy_(list[torch.Tensor](self.model_params), list[torch.Tensor](self.master_params))
