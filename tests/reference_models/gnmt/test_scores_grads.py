"""GNMT's one-pass attention gradients (reference_models/gnmt/scores_grads.py, model.attention_grads=one_pass)
against autograd's, run on the CPU by Triton's interpreter in a child process (the interpreter reads
TRITON_INTERPRET when Triton is first imported); where a GPU is, the child runs the kernel compiled on it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

CHILD = r"""
import json, sys
import torch
from reference_models.gnmt.model import BahdanauAttention
from reference_models.gnmt.scores import PLAIN, FusedScores, additive_scores
from reference_models.gnmt.scores_grads import one_pass_grads

dev = torch.device(sys.argv[1])
worst = {}
g = torch.Generator().manual_seed(0)
# (B, T_q, T_k, units): keys short of their block, one query (the beam search's step), units short of theirs,
# keys in two and three passes (33, 75: MAX_KEYS is 32)
for B, T_q, T_k, n in [(3, 5, 7, 40), (2, 1, 33, 16), (2, 4, 9, 130), (2, 3, 75, 20)]:
    def draw(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    # the model's layout: (T, B, n) projections seen as (B, T, n)
    ref = [draw(T_q, B, n).transpose(0, 1), draw(T_k, B, n).transpose(0, 1), draw(n), draw(n)]
    ref = [t.requires_grad_() for t in ref]
    got = [t.detach().to(dev, torch.float32).requires_grad_() for t in ref]
    grad = draw(B, T_q, T_k)
    additive_scores(*ref).backward(grad)
    FusedScores.apply(*got, PLAIN._replace(one_pass=one_pass_grads)).backward(grad.to(dev, torch.float32))
    for name, a, b in zip(("q", "k", "bias", "v"), ref, got):
        err = float((b.grad.double().cpu() - a.grad).abs().max() / a.grad.abs().max())
        worst[name] = max(worst.get(name, 0.0), err)
# fp16 projections (autocast's), the gradients in fp16 as the reductions give them
q, k = (torch.randn(6, 2, 64, generator=g).to(dev, torch.float16).transpose(0, 1) for _ in range(2))
bias, v, grad = torch.randn(64, device=dev), torch.randn(64, device=dev), torch.randn(2, 6, 6, device=dev).half()
gq, w, gk = one_pass_grads(q, k, bias, v, grad)
half = PLAIN.query_grads(q, k, bias, v, grad)[0], PLAIN.key_grads(q, k, bias, v, grad)
worst["fp16"] = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip((gq, gk), half))
# the attention module end to end: weights and every parameter's gradient, padding masked
torch.manual_seed(0)
eager, fused = BahdanauAttention(16, 16, 16).to(dev), BahdanauAttention(16, 16, 16).to(dev)
fused.load_state_dict(eager.state_dict())
fused.kernels = PLAIN._replace(one_pass=one_pass_grads)
query, keys = torch.randn(5, 3, 16, device=dev), torch.randn(7, 3, 16, device=dev)
pad = torch.zeros(3, 7, dtype=torch.bool, device=dev)
pad[1, 5:] = True
for m in (eager, fused):
    m(query, keys, m.project_keys(keys), pad)[0].square().sum().backward()
worst["module"] = max(float((b.grad - a.grad).abs().max() / a.grad.abs().max())
                      for a, b in zip(eager.parameters(), fused.parameters()))
print(json.dumps(worst))
"""


@pytest.mark.timeout(120)
def test_the_one_pass_gradients_are_autograd_s():
    """fp32 kernels against fp64 autograd on shapes that leave the kernel's blocks part empty, in the model's
    transposed layout; fp16 inputs as under autocast; and the attention module's every gradient with padding."""
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    env = {**os.environ, **({"TRITON_INTERPRET": "1"} if device == "cpu" else {})}
    done = subprocess.run([sys.executable, "-c", CHILD, device], env=env, capture_output=True, text=True,
                          timeout=110, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    worst = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(worst[name] < 1e-5 for name in ("q", "k", "bias", "v", "module")), worst
    assert worst["fp16"] < 1e-5, worst  # both compute in fp32 from the same fp16 inputs
