"""fp8=true: the linear layers fp8 can multiply become torchao's Float8Linear, holding the same parameters, and
what it cannot run says so in one line (harness/interface/fp8.py). On a CPU torchao emulates the fp8 products, so the
numbers here are fp8's, not its speed."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from harness.errors import ConfigError
from harness.observe.gpu_peaks import peak
from harness.results.read.summary import split_label
from harness.interface import fp8
from tests.helpers import child_env, run_cli, said


def _relative(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 32), nn.GELU(), nn.Linear(32, 2))


def test_the_layers_fp8_can_multiply_are_converted_in_place_and_keep_their_parameters():
    model = _mlp()
    plain = copy.deepcopy(model)
    params = list(model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # built before the conversion, as a Benchmark does
    assert fp8.convert(model, torch.device("cpu"), "mlp") == 2
    assert [type(m).__name__ for m in model] == ["Float8Linear", "GELU", "Float8Linear", "GELU", "Linear"]
    assert all(a is b for a, b in zip(model.parameters(), params))  # the optimizer still updates the model
    x = torch.randn(256, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, want = model(x), plain(x)
    assert out.dtype == torch.bfloat16
    # fp8's 3 mantissa bits against bf16's 8, over two products: close, and not the same numbers
    error = _relative(out, want)
    assert 1e-4 < error < 0.1, error
    out.float().pow(2).mean().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in params)
    before = params[0].detach().clone()
    optimizer.step()
    assert not torch.equal(params[0], before)


def test_on_a_cpu_the_emulated_fp8_products_are_torch_s_own_fp8_products():
    """The emulation (fp8 values multiplied in bf16, which holds them exactly) against torch._scaled_mm."""
    model = _mlp()
    native = copy.deepcopy(model)
    fp8.convert(model, torch.device("cpu"), "mlp")
    # after fp8.convert, which imports torchao with its import-time SyntaxWarning quieted (Python 3.12)
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    convert_to_float8_training(native, config=Float8LinearConfig.from_recipe_name("tensorwise"),
                               module_filter_fn=lambda module, _fqn: fp8.eligible(module))
    assert model[0].config.emulate and not native[0].config.emulate
    x = torch.randn(32, 64)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.equal(model(x), native(x))


def test_torchao_imported_uncompiled_under_warnings_as_errors_still_converts(tmp_path):
    """torchao 0.18 holds an invalid escape in a docstring: Python warns as it compiles the file (wheels installed
    without compiled files, as on the GPU image), which pytest's errors and a run's console would show. An empty
    PYTHONPYCACHEPREFIX makes this child compile every file afresh."""
    code = ("import torch; from torch import nn; from harness.interface import fp8; "
            "print(fp8.convert(nn.Sequential(nn.Linear(64, 32)), torch.device('cpu'), 'mlp'))")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120,
                          env=child_env(PYTHONPYCACHEPREFIX=str(tmp_path)))
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n", "")


def test_a_model_with_no_layer_fp8_can_multiply_is_told_so_in_one_line():
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Flatten(), nn.Linear(16, 10))
    with pytest.raises(ConfigError, match=r"model=convnet has none .*: leave fp8 out$") as err:
        fp8.convert(model, torch.device("cpu"), "convnet")
    assert "\n" not in str(err.value) and type(model[2]) is nn.Linear


def test_without_torchao_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchao.float8", None)  # import fails as if torchao were absent
    with pytest.raises(ConfigError, match=r"torchao, which is not installed .*pip install -e '\.\[fp8\]'"):
        fp8.convert(_mlp(), torch.device("cpu"), "mlp")


def test_fp8_is_part_of_the_base_precision_and_its_mfu_is_over_the_fp8_peak():
    assert split_label("bf16+fp8+compile+graph") == ("bf16+fp8", "compile+graph")
    assert split_label("amp+master+fp8") == ("amp+master+fp8", "eager")
    fp8_peak, _ = peak("NVIDIA H200", "amp+fp8+compile")
    fp16_peak, _ = peak("NVIDIA H200", "amp+compile")
    assert fp8_peak is not None and fp16_peak is not None
    assert fp8_peak.column == "fp8" and fp8_peak.tflops == pytest.approx(2 * fp16_peak.tflops, rel=1e-3)


def test_ncf_trains_to_its_target_with_fp8_matmuls_on_a_cpu(tmp_path):
    """The embedded NeuMF's MLP (64 -> 32 -> 16) in fp8 under bf16 autocast still reaches HR@10 0.635."""
    done = run_cli("harness.train", "model=ncf", "seed=1", "device=cpu", "precision=bf16", "fp8=true",
                   f"output_root={tmp_path}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("runs/*/result.json")).read_text())
    assert result["status"] == "success" and result["precision"] == "bf16+fp8"


def test_a_model_fp8_cannot_convert_fails_in_one_line_with_its_run_recorded(tmp_path):
    """Which layers a model has is known once it is built: the run fails there, its result.json says why."""
    done = run_cli("harness.train", "model=resnet", "+debug=resnet", "device=cpu", "precision=bf16", "fp8=true",
                   f"output_root={tmp_path}", cwd=tmp_path)
    assert done.returncode == 1
    errors = [line for line in said(done.stderr) if not line.startswith("run dir:")]
    assert len(errors) == 1 and "model=resnet has none" in errors[0] and "leave fp8 out" in errors[0], done.stderr
    result = json.loads(next(tmp_path.glob("runs/*/result.json")).read_text())
    assert result["status"] == "failed" and "model=resnet has none" in result["reason"]


def test_a_model_that_shards_itself_converts_before_sharding(tmp_path):
    """Llama 3.1 8B under FSDP2 on two gloo ranks: the harness cannot convert shards, so the model converts its
    layers first (RunContext.convert_layers); without that the run would end in fp8's one-line refusal."""
    done = run_cli("harness.train", "model=llama31_8b", "+debug=llama31_8b", "device=cpu", "gpus=2", "model.fsdp=true",
                   "precision=bf16", "fp8=true", "seed=1", f"output_root={tmp_path}", cwd=tmp_path)
    result = json.loads(next(tmp_path.glob("runs/*/result.json")).read_text())
    # the debug preset's one epoch ends short of the target: "aborted" is its normal end
    assert result["status"] in ("success", "aborted"), (result.get("reason"), done.stderr[-2000:])
    assert result["precision"] == "bf16+fp8" and result["world_size"] == 2


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9),
                    reason="fp8 products need a GPU of compute capability 8.9 or later (L4, L40S, H100, H200)")
def test_on_a_gpu_a_compiled_bert_large_layer_in_fp8_follows_its_bf16_twin():
    """BERT-large's layer at SQuAD's 384 tokens: the fp8 products on the GPU's Tensor Cores, compiled as
    mode=throughput compiles each layer, forward and backward within fp8's rounding of the bf16 layer's."""
    from reference_models.bert.model import BertLayer

    torch.manual_seed(0)
    twin = BertLayer(1024, 16, 4096, 0.0, 0.0, 1e-12).cuda()
    layer = copy.deepcopy(twin)
    assert fp8.convert(layer, torch.device("cuda"), "bert_large") == 4
    compiled = torch.compile(layer)
    x = torch.randn(8, 384, 1024, device="cuda")
    x_fp8, x_bf16 = x.clone().requires_grad_(), x.clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out, want = compiled(x_fp8), twin(x_bf16)
    assert 1e-4 < _relative(out, want) < 0.15
    grad = torch.randn_like(out)
    out.backward(grad)
    want.backward(grad)
    assert _relative(x_fp8.grad, x_bf16.grad) < 0.3
    assert _relative(layer.ffn_in.weight.grad, twin.ffn_in.weight.grad) < 0.3


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has a GPU: the run would get amp")
def test_on_a_host_without_a_gpu_fp8_asks_for_bf16_in_one_line():
    """device=auto on a host with no GPU resolves to fp32, which fp8's products cannot sit beside."""
    from harness.config import compose
    from harness.fastpath import resolve
    from harness.run.launch import check_resources

    cfg = compose(["model=ncf", "fp8=true"])
    resolve(cfg, cuda=False)
    with pytest.raises(ConfigError, match=r"^fp8=true multiplies in fp8 .* trains in fp32 \(this host has no GPU\): "
                                          r"add precision=bf16$"):
        check_resources(cfg)
    cfg = compose(["model=ncf", "fp8=true", "precision=bf16"])
    resolve(cfg, cuda=False)
    check_resources(cfg)
