"""model.attention (reference_models/attention.py), of the Transformer and BERT: `efficient` keeps cuDNN's fused
attention out on CUDA, for the step's forward and the backward it chose; `auto`, and any choice on a CPU, leave
PyTorch's own order."""
from __future__ import annotations

import pytest
import torch

from reference_models.attention import Attention, kernels
from reference_models.bert.model import BertEncoder, BertForQuestionAnswering


def _enabled() -> dict[str, bool]:
    cuda = torch.backends.cuda
    return {"cudnn": cuda.cudnn_sdp_enabled(), "flash": cuda.flash_sdp_enabled(),
            "efficient": cuda.mem_efficient_sdp_enabled(), "math": cuda.math_sdp_enabled()}


def test_efficient_on_cuda_keeps_to_flash_and_memory_efficient_kernels_for_the_step_alone():
    before = _enabled()
    with kernels(Attention.efficient, torch.device("cuda"))():
        assert _enabled() == {"cudnn": False, "flash": True, "efficient": True, "math": False}
    assert _enabled() == before  # put back as the step ends


@pytest.mark.parametrize("choice, device", [(Attention.auto, "cuda"), (Attention.efficient, "cpu")])
def test_auto_and_a_cpu_leave_pytorch_s_order(choice, device):
    before = _enabled()
    with kernels(choice, torch.device(device))():
        assert _enabled() == before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels chosen are CUDA's")
def test_on_cuda_bert_s_step_runs_flash_attention_and_the_loss_of_pytorch_s_choice():
    """BERT's layers at head size 64 in bf16, without dropout: the forward and the backward run FlashAttention's
    kernels and no cuDNN attention, and the loss is the one PyTorch's own choice gives, to bf16's rounding."""
    torch.manual_seed(0)
    model = BertForQuestionAnswering(BertEncoder(64, 128, 2, 2, 256, positions=64, dropout=0.0, attention_dropout=0.0,
                                                 pooler=False)).cuda()
    g = torch.Generator(device="cuda").manual_seed(1)
    batch = {"tokens": torch.randint(0, 64, (4, 64), generator=g, device="cuda"),
             "token_types": torch.zeros(4, 64, dtype=torch.long, device="cuda"),
             "start": torch.randint(0, 64, (4,), generator=g, device="cuda"),
             "end": torch.randint(0, 64, (4,), generator=g, device="cuda")}
    losses = {}
    for choice in (Attention.auto, Attention.efficient):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            with kernels(choice, torch.device("cuda"))(), torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(**batch)
            loss.backward()
            torch.cuda.synchronize()
        losses[choice] = float(loss)
        if choice == Attention.efficient:
            names = [e.name.lower() for e in prof.events()]
            assert any("flash" in n for n in names) and not any("cudnn" in n and "attention" in n for n in names)
    assert losses[Attention.efficient] == pytest.approx(losses[Attention.auto], rel=2e-2)
