"""fp8=true: a model's linear layers multiply in fp8, through torchao's Float8Linear.

    python -m harness.train model=bert_large mode=throughput precision=amp fp8=true
    python -m harness.train model=bert_base +debug=bert_base mode=throughput device=cpu precision=bf16 fp8=true

MLPerf's H100 and H200 submissions run their transformers' matmuls in fp8 (Transformer Engine); torchao is
PyTorch's own library for the same recipe, written for torch.compile, so the harness converts with it instead
of scaling and casting by hand: each nn.Linear whose two sizes are multiples of 16 (what torch._scaled_mm
takes) becomes a Float8Linear with dynamic tensorwise scales (e4m3 inputs and weights, e5m2 gradients, each
tensor scaled by its own max every step, so no scale history rides in the model's state). Its weights stay
what they were (fp32, or fp16/bf16 with master_weights=true) and its outputs come in autocast's dtype, so
everything around the matmuls, the optimizer and the checkpoints are untouched. Convolutions, embeddings and
layers of other sizes (a classifier's 1000 or 2 outputs) keep their precision. The conversion comes after the
model is built and before the optimizer's master copies and DDP take its parameters: a Float8Linear holds the
same weight and bias Parameters the nn.Linear did. The harness converts the model a Benchmark returns
(harness/run/build.py); a model that shards itself (its `sharded`, FSDP) converts before sharding, through
RunContext.convert_layers, since the shards are no longer nn.Linear's.

It is an option, not a model's default, where measured slower: on one H100 (2026-12-06, docs/benchmarks/
gpu_check_2026-12-06.md) BERT-large at batch 32 ran 434 sequences/s in fp8 against 484 in bf16 (0.90x): at its
hidden size of 1024 each product's amax, scale and cast passes cost more than fp8's faster products save (torchao's
own size filter, half the layers converted, 0.93x).
"""
from __future__ import annotations

import dataclasses
import logging
import warnings

import torch
from torch import nn

from harness.errors import ConfigError

FP8_MULTIPLE = 16  # torch._scaled_mm's requirement on both sizes of an fp8 matrix product


def eligible(module: nn.Module) -> bool:
    """Whether fp8=true converts this module: a plain nn.Linear (not a subclass with its own forward) of
    sizes that fp8 matrix products take."""
    return (type(module) is nn.Linear and module.in_features % FP8_MULTIPLE == 0
            and module.out_features % FP8_MULTIPLE == 0)


def converted(model: nn.Module) -> bool:
    """Whether `model` holds fp8 layers already (its Benchmark converted them before sharding). By the class's
    name: torchao is imported only where fp8=true asks for it."""
    return any(type(m).__name__ == "Float8Linear" for m in model.modules())


def convert(model: nn.Module, device: torch.device, model_name: str) -> int:
    """Swap `model`'s eligible linear layers for Float8Linear in place; how many it swapped. ConfigError,
    with what to do, when torchao is missing, the GPU has no fp8 Tensor Cores or no layer is eligible."""
    pytree_log = logging.getLogger("torch.utils._pytree")
    level = pytree_log.level
    # torchao 0.18 registers an Enum with pytree at import, which torch 2.12 and later answer with a deprecation
    # warning on the console of every run: a message to torchao's developers, not to the run's user
    pytree_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # torchao 0.18's quant_api.py has a '\.' in a docstring, which Python flags when it compiles the file
            # (where pip installed it uncompiled; a SyntaxWarning from 3.12, a DeprecationWarning before): two
            # lines of torchao's own on the console, or a SyntaxError where warnings are errors
            warnings.filterwarnings("ignore", "invalid escape sequence")
            from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except ImportError as err:
        raise ConfigError(f"fp8=true multiplies through torchao, which is not installed ({err}): "
                          "pip install -e '.[fp8]', or leave fp8 out") from None
    finally:
        pytree_log.setLevel(level)
    major, minor = torch.cuda.get_device_capability(device) if device.type == "cuda" else (9, 0)
    if (major, minor) < (8, 9):
        raise ConfigError(f"fp8=true needs fp8 Tensor Cores (compute capability 8.9 or later: L4, L40S, H100, H200); "
                          f"{torch.cuda.get_device_name(device)} is {major}.{minor}: leave fp8 out")
    count = sum(eligible(m) for m in model.modules())
    if count == 0:
        raise ConfigError(f"fp8=true converts linear layers whose sizes are multiples of {FP8_MULTIPLE}; "
                          f"model={model_name} has none (its convolutions and other layers keep their "
                          "precision): leave fp8 out")
    # Off CUDA, torchao's emulation: the same fp8 casts and scales, the product of the fp8 values taken in
    # their original dtype, which holds them exactly; torch's CPU _scaled_mm gives the same outputs as a plain
    # loop, 230x slower on a 2048x64x32 product (torch 2.14; tests/run/test_fp8.py compares the two)
    config = dataclasses.replace(Float8LinearConfig.from_recipe_name("tensorwise"), emulate=device.type != "cuda")
    convert_to_float8_training(model, config=config, module_filter_fn=lambda module, _fqn: eligible(module))
    return count
