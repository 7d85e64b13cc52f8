"""ResNet-50 v1.5 at MLPerf's size, its optimizers, schedule and the keys the MLPerf rules require."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from mlperf_logging.compliance_checker import mlp_compliance
from torchvision.models import resnet50

from reference_models.resnet.model import ScaledResNet, build, parameter_groups
from reference_models.vision.optim import LARS, PolyWarmup, make_optimizer, mlperf_keys

RULES = Path(mlp_compliance.__file__).parent


def test_real_scale_is_torchvisions_resnet50_with_the_reference_parameter_count():
    model = build([3, 4, 6, 3], 64, 1000)
    assert type(model) is type(resnet50()) and sum(p.numel() for p in model.parameters()) == 25_557_032
    # the MLPerf TF reference classifies 1001 ways (a background class): one more row of 2048 weights and a bias
    assert sum(p.numel() for p in build([3, 4, 6, 3], 64, 1001).parameters()) == 25_559_081


def test_the_scaled_network_at_width_64_is_resnet50_layer_for_layer():
    ours = ScaledResNet([3, 4, 6, 3], 64, 1000).state_dict()
    theirs = resnet50().state_dict()
    assert list(ours) == list(theirs)
    assert all(ours[k].shape == theirs[k].shape for k in ours)


def test_v1_5_strides_the_3x3_convolution_not_the_first_1x1():
    block = build([1, 1, 1, 1], 8, 10).layer2[0]
    assert block.conv1.stride == (1, 1) and block.conv2.stride == (2, 2) and block.conv2.kernel_size == (3, 3)
    assert build([1, 1, 1, 1], 8, 10)(torch.randn(2, 3, 64, 64)).shape == (2, 10)


def test_zero_init_residual_zeroes_each_blocks_last_batchnorm_scale_only():
    plain, zeroed = build([1, 2, 1, 1], 8, 10), build([1, 2, 1, 1], 8, 10, zero_init_residual=True)
    blocks = [b for layer in (zeroed.layer1, zeroed.layer2, zeroed.layer3, zeroed.layer4) for b in layer]
    assert all(b.bn3.weight.abs().sum() == 0 and b.bn1.weight.min() == 1 for b in blocks)
    assert all(b.bn3.weight.min() == 1 for layer in (plain.layer1, plain.layer4) for b in layer)


def test_batchnorm_and_biases_get_no_weight_decay_unless_asked():
    model = build([1, 1, 1, 1], 8, 10)
    decayed, spared = parameter_groups(model, 5e-5, decay_bn_and_bias=False)
    bn = [p for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d) for p in m.parameters()]
    assert {id(p) for p in spared["params"]} == {id(p) for p in bn} | {id(model.fc.bias)}
    assert decayed["weight_decay"] == 5e-5 and spared["weight_decay"] == 0.0
    assert len(decayed["params"]) + len(spared["params"]) == len(list(model.parameters()))
    (everything,) = parameter_groups(model, 5e-5, decay_bn_and_bias=True)
    assert len(everything["params"]) == len(list(model.parameters()))


def test_lars_scales_each_weight_step_by_its_trust_ratio_and_leaves_skipped_groups_plain():
    torch.manual_seed(0)
    w, b = torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(4))
    w0, b0 = w.detach().clone(), b.detach().clone()
    opt = LARS([{"params": [w], "weight_decay": 1e-4, "lars": True}, {"params": [b], "weight_decay": 0.0, "lars": False}],
               lr=2.0, momentum=0.9, eta=0.001)
    gw, gb = torch.randn(4, 3), torch.randn(4)
    w.grad, b.grad = gw.clone(), gb.clone()
    opt.step()
    trust = 0.001 * w0.norm() / (gw.norm() + 1e-4 * w0.norm())
    step1 = trust * (gw + 1e-4 * w0)
    torch.testing.assert_close(w.detach(), w0 - 2.0 * step1)
    torch.testing.assert_close(b.detach(), b0 - 2.0 * gb)
    w1 = w.detach().clone()
    w.grad = gw.clone()
    opt.step()  # the second step carries momentum
    trust = 0.001 * w1.norm() / (gw.norm() + 1e-4 * w1.norm())
    torch.testing.assert_close(w.detach(), w1 - 2.0 * (0.9 * step1 + trust * (gw + 1e-4 * w1)))


def test_warm_up_then_polynomial_decay_to_the_end_rate():
    s = PolyWarmup(base_lr=2.0, warmup_steps=10, total_steps=110, end_lr=0.0001, power=2.0)
    assert s.rate(1) == pytest.approx(0.2) and s.rate(10) == pytest.approx(2.0)
    assert s.rate(60) == pytest.approx(0.0001 + (2.0 - 0.0001) * 0.25)
    assert s.rate(110) == pytest.approx(0.0001) and s.rate(500) == pytest.approx(0.0001)
    assert s.decay_steps == 100
    model = torch.nn.Linear(2, 2)
    opt = make_optimizer("sgd", [{"params": list(model.parameters()), "weight_decay": 0.0, "lars": True}], 2.0, 0.9,
                         0.001, 0.0, fused=False)
    sched = s.scheduler(opt)
    seen = []
    for _ in range(12):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([s.rate(i) for i in range(1, 13)])


def _required(path: Path) -> set[str]:
    return {r["KEY"]["NAME"] for r in yaml.safe_load(path.read_text()) if "KEY" in r and r["KEY"].get("REQ")}


@pytest.mark.parametrize("name", ["sgd", "lars"])
@pytest.mark.parametrize("ruleset", ["0.7.0", "3.1.0"])  # 4.0.0's closed_resnet.yaml enqueues 3.1.0's files
def test_the_optimizer_logs_every_key_its_ruleset_requires(name, ruleset):
    keys = mlperf_keys(name, PolyWarmup(0.75, 50, 500), 5.0, 0.9, 2.5e-5, 0.0)
    have = set(keys) | {"model_bn_span"}  # logged by the benchmark beside these
    assert _required(RULES / f"training_{ruleset}" / f"closed_resnet_{name}.yaml") <= have
    assert keys["opt_name"] == name
    assert math.log2(keys[f"{name}_opt_weight_decay"] / 1e-4) % 1 == 0  # the closed rules' check
