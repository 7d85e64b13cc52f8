"""GNMT's hand-written attention-score gradients (reference_models/gnmt/scores.py) against autograd's."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from harness.config import compose
from harness.errors import ConfigError
from harness.fastpath import resolve
from reference_models.gnmt.model import BahdanauAttention
from reference_models.gnmt.scores import PLAIN, FusedScores, additive_scores, compiled_kernels
from tests.helpers import REPO, child_env


def _inputs(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 5, 8), (3, 7, 8), (8,), (8,)]  # q (B, T_q, n), k (B, T_k, n), bias, v
    return [torch.randn(s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes]


def test_the_fused_scores_and_every_gradient_are_autograd_s():
    plain, fused = _inputs(), _inputs()
    grad = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    expected = additive_scores(*plain)
    got = FusedScores.apply(*fused, PLAIN)
    torch.testing.assert_close(got, expected)
    expected.backward(grad)
    got.backward(grad)
    for name, a, b in zip(("q", "k", "bias", "v"), plain, fused):
        torch.testing.assert_close(b.grad, a.grad, msg=lambda m, n=name: f"{n}: {m}")


def test_the_attention_gives_the_same_weights_and_gradients_through_either_path():
    torch.manual_seed(0)
    eager = BahdanauAttention(8, 8, 8).double()
    fused = BahdanauAttention(8, 8, 8).double()
    fused.load_state_dict(eager.state_dict())
    fused.kernels = PLAIN  # the kernels' math, uncompiled: the CPU has no torch.compile here
    query, keys = torch.randn(5, 3, 8, dtype=torch.float64), torch.randn(7, 3, 8, dtype=torch.float64)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 5:] = True
    outs = [m(query, keys, m.project_keys(keys), pad) for m in (eager, fused)]
    torch.testing.assert_close(outs[1], outs[0])
    for context, _ in outs:
        context.square().sum().backward()
    for (name, a), b in zip(eager.named_parameters(), fused.parameters()):
        torch.testing.assert_close(b.grad, a.grad, msg=lambda m, n=name: f"{n}: {m}")


def test_the_one_pass_gradients_without_triton_are_refused_with_what_to_do(monkeypatch):
    # part of Inductor imported already, as an earlier test of the worker left it: the refusal came only after
    # torch.compile, which then imported the rest of Inductor and failed on the missing Triton (a CI run)
    import torch._inductor.runtime.triton_compat  # noqa: F401

    monkeypatch.setitem(sys.modules, "triton", None)  # a torch built without Triton: its import fails
    monkeypatch.delitem(sys.modules, "reference_models.gnmt.scores_grads", raising=False)
    with pytest.raises(ConfigError, match=r"attention_grads=one_pass runs a Triton kernel.*leave it out"):
        compiled_kernels(one_pass=True)


def test_the_one_pass_gradients_without_the_compiled_attention_are_refused_with_what_to_do(tmp_path):
    """Without model.compile_attention=true the option would change nothing: the run says so and fails, rather
    than training the eager path under it."""
    done = subprocess.run([sys.executable, "-m", "harness.train", "model=gnmt", "+debug=gnmt", "seed=1",
                           "model.attention_grads=one_pass", f"output_root={tmp_path}"], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "error: model.attention_grads='one_pass': out of range; need compile_attention=true (it is the compiled " \
           "attention's backward), or reductions" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not list(tmp_path.rglob("mlperf.log"))


def test_the_cuda_fast_path_takes_the_one_pass_gradients_unless_the_attention_is_left_eager():
    for extra, mode, want in (([], "throughput", "one_pass"), ([], "train", "reductions"),
                              (["eager=true"], "throughput", "reductions"),
                              (["model.compile_attention=false"], "throughput", "reductions")):
        cfg = compose(["model=gnmt", f"mode={mode}", *extra])
        resolve(cfg, cuda=True, given=extra)
        assert cfg.model.attention_grads == want, (extra, mode)
    # the fast path leaves out what the command line's eager attention refuses, and keeps the rest of it
    assert cfg.model.compile_loss is True and cfg.model.compile_attention is False
