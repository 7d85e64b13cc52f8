"""Numeric precision of a run: fp32, tf32, amp (fp16 autocast with a gradient scaler) or bf16;
with master_weights=true, amp and bf16 keep the weights themselves in fp16 or bf16 (harness/run/master_weights.py)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import ContextManager, Optional

import torch


from harness.errors import ConfigError
from harness.fastpath import check_device
from harness.run.master_weights import MasterWeights


@dataclass
class PrecisionPolicy:
    name: str
    device: torch.device
    dtype: Optional[torch.dtype]  # autocast dtype, None for full precision
    scaler: Optional[torch.amp.GradScaler]
    master: Optional[MasterWeights] = None  # set by keep_master_weights

    def keep_master_weights(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Weights in the autocast dtype, fp32 copies in the optimizer: before DDP wraps the model."""
        if self.dtype is None:
            raise ConfigError(f"master_weights=true needs precision=amp or precision=bf16, not {self.name}")
        self.master = MasterWeights(model, optimizer, self.dtype)

    def autocast(self) -> ContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)


def policy(name: str, device: torch.device) -> PrecisionPolicy:
    cuda = device.type == "cuda"
    check_device(name, cuda)  # under an outside launcher (torchrun, srun) the rank's device is known only here
    if cuda:
        # TF32 tensor-core matmuls only where asked for: fp32 means IEEE fp32 on every device.
        allow = name == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = allow
        torch.backends.cudnn.allow_tf32 = allow
    if name == "amp":
        return PrecisionPolicy(name, device, torch.float16, torch.amp.GradScaler("cuda"))
    if name == "bf16":
        return PrecisionPolicy(name, device, torch.bfloat16, None)
    return PrecisionPolicy(name, device, None, None)
