"""DLRM-DCNv2 at the MLPerf reference's sizes (counted on the meta device), its cross network, the
reference's learning-rate policy, and the real preset's logged values against the official closed rules
(training_5.1.0/closed_dlrm_dcnv2.yaml, the same from 3.0.0 to 6.0.0)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from mlperf_logging.compliance_checker import mlp_compliance
from omegaconf import OmegaConf

from harness.config import compose
from harness.interface import RunContext
from reference_models.dlrm_dcnv2.benchmark import DLRMBenchmark, policy_factor
from reference_models.dlrm_dcnv2.criteo import MULTI_HOT_SIZES, REFERENCE_CARDINALITIES, VALIDATION_SAMPLES
from reference_models.dlrm_dcnv2.model import DLRMDCNv2, DLRMShape, LowRankCrossNet, parameter_count


def test_the_real_model_has_the_reference_s_parameters():
    """torchrec's DLRM_DCN at the README's flags: 26 tables of 128 over the capped cardinalities, dense
    arch 13-512-256-128, LowRankCrossNet(27 x 128, 3 layers, rank 512), over arch 3456-1024-1024-512-256-1."""
    rows = sum(REFERENCE_CARDINALITIES)
    assert rows == 204_184_588 and len(REFERENCE_CARDINALITIES) == len(MULTI_HOT_SIZES) == 26
    dense_arch = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 128 + 128)
    width = 27 * 128
    crossnet = 3 * (width * 512 + 512 * width + width)  # W (N x r), V (r x N), bias (N) per layer
    over_arch = sum(a * b + b for a, b in zip([width, 1024, 1024, 512, 256], [1024, 1024, 512, 256, 1]))
    assert (dense_arch, crossnet, over_arch) == (171_392, 10_627_200, 5_245_953)
    assert parameter_count(DLRMShape()) == rows * 128 + dense_arch + crossnet + over_arch == 26_151_671_809


def test_the_cross_layers_compute_x0_times_w_v_x_plus_b_plus_x():
    torch.manual_seed(0)
    net = LowRankCrossNet(6, layers=2, low_rank=3)
    for b in net.bias:
        torch.nn.init.normal_(b)
    x0 = torch.randn(4, 6)
    x = x0
    for w, v, b in zip(net.W_kernels, net.V_kernels, net.bias):
        x = x0 * (x @ v.T @ w.T + b) + x
    assert torch.allclose(net(x0), x, atol=1e-6)


def test_a_small_model_gives_one_logit_per_sample_from_multi_hot_bags():
    cards = (7,) * 26
    model = DLRMDCNv2(DLRMShape(cards, 4, (8, 4), (16, 1), 2, 3))
    sparse = [torch.randint(0, 7, (5, hot), dtype=torch.int32) for hot in MULTI_HOT_SIZES]
    out = model(torch.rand(5, 13), sparse)
    assert out.shape == (5,)
    # a bag is the sum of its ids' rows: a second id equal to the first doubles that table's share
    table = model.embeddings[0]
    ids = torch.tensor([[2, 2, 2]], dtype=torch.int32)
    assert torch.allclose(table(ids), 3 * table.weight[2:3])


def _trained(extra: list[str], steps: int = 5) -> tuple[list[float], list[torch.Tensor]]:
    from harness.run.build import build_run, context_for
    from harness.run.step import train_step

    cfg = compose(["model=dlrm_dcnv2", "+debug=dlrm_dcnv2", "mode=throughput", "seed=1", "device=cpu",
                   "precision=fp32", *extra])
    run = build_run(cfg, context_for(cfg))
    batch = run.synthetic_batch()
    losses = [float(train_step(run, batch)[0]) for _ in range(steps)]
    return losses, [p.detach().clone() for p in run.bench.model.parameters()]


def test_sparse_table_gradients_train_as_the_dense_ones_do():
    """model.sparse_gradients changes what Adagrad touches (the rows a batch used), not the update: the
    losses and every weight, tables included, follow the dense step's to float rounding."""
    dense_losses, dense = _trained([])
    sparse_losses, sparse = _trained(["model.sparse_gradients=true"])
    assert sparse_losses == pytest.approx(dense_losses, rel=1e-6) and len(set(dense_losses)) > 1
    for a, b in zip(dense, sparse):
        assert torch.allclose(a, b, atol=1e-6)


class _ReferencePolicy(torch.optim.lr_scheduler.LRScheduler):
    """The reference's lr_scheduler.py (LRPolicyScheduler), line for line."""

    def __init__(self, optimizer, num_warmup_steps, decay_start_step, num_decay_steps):
        self.num_warmup_steps = num_warmup_steps
        self.decay_start_step = decay_start_step
        self.decay_end_step = decay_start_step + num_decay_steps
        self.num_decay_steps = num_decay_steps
        super().__init__(optimizer)

    def get_lr(self):
        step_count = self._step_count
        if step_count < self.num_warmup_steps:
            scale = 1.0 - (self.num_warmup_steps - step_count) / self.num_warmup_steps
            lr = [base_lr * scale for base_lr in self.base_lrs]
            self.last_lr = lr
        elif self.decay_start_step <= step_count and step_count < self.decay_end_step:
            decayed_steps = step_count - self.decay_start_step
            scale = ((self.num_decay_steps - decayed_steps) / self.num_decay_steps) ** 2
            lr = [max(0.0000001, base_lr * scale) for base_lr in self.base_lrs]
            self.last_lr = lr
        else:
            lr = self.last_lr if self.num_decay_steps > 0 else self.base_lrs
        return lr


def test_the_rate_follows_the_reference_s_warm_up_and_decay_policy():
    for warmup, start, steps in [(0, 0, 0), (4, 6, 5), (3, 3, 2), (5, 5, 0)]:
        ours = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
        theirs = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
        ours_sched = torch.optim.lr_scheduler.LambdaLR(ours, policy_factor(0.5, warmup, start, steps))
        theirs_sched = _ReferencePolicy(theirs, warmup, start, steps)
        for _ in range(14):  # the rate each training step uses, then the step
            assert ours.param_groups[0]["lr"] == pytest.approx(theirs.param_groups[0]["lr"], rel=1e-12), (warmup, start, steps)
            ours.step()
            theirs.step()
            ours_sched.step()
            theirs_sched.step()


def test_the_real_preset_logs_every_key_the_closed_rules_check_with_the_values_they_require():
    cfg = compose(["model=dlrm_dcnv2", "dataset=criteo_1tb_multihot"])
    OmegaConf.resolve(cfg)
    ctx = RunContext(cfg=cfg, data_dir=None, device=torch.device("meta"), rank=0, world_size=8, seed=1, shared_seed=1)
    logged = DLRMBenchmark(ctx).hyperparameters() | {"eval_samples": VALIDATION_SAMPLES}
    assert logged["global_batch_size"] == 65536 and logged["opt_base_learning_rate"] == 0.005
    assert cfg.model.target == 0.80275 and cfg.model.eval_every_samples == 3200 * 65536 and cfg.model.max_epochs == 1
    assert cfg.mlperf.division == "closed" and compose(["model=dlrm_dcnv2"]).mlperf.division == "open"
    folder = Path(mlp_compliance.__file__).parent / "training_5.1.0"
    rules = [r["KEY"] for f in ("closed_common.yaml", "closed_dlrm_dcnv2.yaml")
             for r in yaml.safe_load((folder / f).read_text()) if "KEY" in r]
    checked = []
    for rule in rules:
        if rule["NAME"] not in logged:
            continue
        v = {"value": logged[rule["NAME"]]}
        if "CHECK" in rule:
            assert eval(rule["CHECK"], {}, {"v": v, "s": {}}), (rule["NAME"], v, rule["CHECK"])
            checked.append(rule["NAME"])
    assert {r["NAME"] for r in rules} - set(logged) == {"submission_benchmark", "eval_accuracy"}  # the harness's, the run's
    assert len(checked) == 10
