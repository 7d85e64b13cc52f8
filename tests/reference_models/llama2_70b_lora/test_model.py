"""Llama 2 70B LoRA's model: the real base's and adapters' parameter counts (on the meta device), LoRA's
start at the base model and its frozen base, the Hugging Face checkpoint read back as written (fused or
separate q/k/v, rotary rows permuted), and the real preset's logged values against the official closed
rules (training_6.0.0/closed_llama2_70b_lora.yaml, the same in 5.1.0)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from mlperf_logging.compliance_checker import mlp_compliance
from safetensors.torch import load_file, save_file

from harness.config import compose
from harness.interface import DataError, RunContext
from reference_models.llama.model import Llama, LlamaShape, parameter_count
from reference_models.llama2_70b_lora import checkpoint
from reference_models.llama.schedule import cosine_with_warmup
from reference_models.llama2_70b_lora.benchmark import Llama2LoraBenchmark
from reference_models.llama2_70b_lora.lora import LoRALinear, apply_lora, trainable_count
from reference_models.llama2_70b_lora.model import LLAMA2_70B

SMALL = LlamaShape(vocab_size=50, dim=32, layers=2, heads=4, kv_heads=2, ffn_dim=48, max_seq_len=16, rope_theta=1e4,
                   rope_scaling=None, fused_qkv=True)


def test_the_real_base_has_llama_2_70b_s_parameters_and_the_adapters_the_reference_s():
    assert parameter_count(LLAMA2_70B) == 68_976_648_192
    # peft's print_trainable_parameters in the reference's logs: 44,564,480 of 69,021,212,672
    assert trainable_count(LLAMA2_70B, 16, ["wqkv", "wo"]) == 44_564_480


def test_lora_starts_at_the_base_model_and_trains_only_the_adapters():
    torch.manual_seed(0)
    model = Llama(SMALL)
    tokens = torch.randint(0, 50, (2, 10))
    before = model(tokens)
    apply_lora(model, ["wqkv", "wo"], 4, 8.0, 0.1)
    model.eval()
    assert torch.equal(model(tokens), before)  # B is zero: no update yet
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_" in n for n in trainable) and len(trainable) == 2 * 2 * SMALL.layers
    frozen = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad}
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model(tokens).logsumexp(-1).mean().backward()
    optimizer.step()
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if n in frozen)
    adapter = model.layers[0].attention.wo
    assert isinstance(adapter, LoRALinear) and adapter.scaling == 2.0 and adapter.lora_b.weight.abs().sum() > 0


def _same_outputs(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    tokens = torch.randint(0, 50, (2, 12))
    return torch.allclose(a(tokens), b(tokens), atol=1e-5)


def test_a_checkpoint_reads_back_fused_or_separate_and_from_hugging_face_s_separate_projections(tmp_path):
    torch.manual_seed(1)
    model = Llama(SMALL).eval()
    checkpoint.save_base(model, SMALL, tmp_path / "fused")
    shape = checkpoint.read_shape(tmp_path / "fused", 16)
    assert shape == SMALL
    with_adapters = Llama(shape)
    apply_lora(with_adapters, ["wqkv", "wo"], 4, 8.0, 0.0)
    checkpoint.load_base(with_adapters, shape, tmp_path / "fused")
    assert _same_outputs(model, with_adapters.eval())
    separate = checkpoint.read_shape(tmp_path / "fused", 16, fused_qkv=False)
    unfused = Llama(separate)
    checkpoint.load_base(unfused, separate, tmp_path / "fused")
    assert _same_outputs(model, unfused.eval())
    # meta-llama/Llama-2-*-hf's layout: q_proj, k_proj, v_proj in shards an index maps
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((tmp_path / "fused" / "config.json").read_text())
    tensors = load_file(tmp_path / "fused" / "model.safetensors")
    weight_map = {}
    for i in range(SMALL.layers):
        q, k, v = tensors.pop(f"model.layers.{i}.self_attn.qkv_proj.weight").split([32, 16, 16])
        for name, w in zip("qkv", (q, k, v)):
            key = f"model.layers.{i}.self_attn.{name}_proj.weight"
            save_file({key: w.contiguous()}, tmp_path / "hf" / f"{key}.safetensors")
            weight_map[key] = f"{key}.safetensors"
    save_file(tensors, tmp_path / "hf" / "rest.safetensors")
    weight_map |= {key: "rest.safetensors" for key in tensors}
    (tmp_path / "hf" / checkpoint.INDEX).write_text(json.dumps({"weight_map": weight_map}))
    from_hf = Llama(SMALL)
    checkpoint.load_base(from_hf, SMALL, tmp_path / "hf")
    assert _same_outputs(model, from_hf.eval())


def test_a_checkpoint_of_another_shape_or_without_weights_is_named(tmp_path):
    checkpoint.save_base(Llama(SMALL), SMALL, tmp_path)
    bigger = LlamaShape(**{**SMALL.__dict__, "ffn_dim": 64})
    with pytest.raises(DataError, match=r"feed_forward.w1.weight is \(48, 32\) in the checkpoint, \(64, 32\)"):
        checkpoint.load_base(Llama(bigger), bigger, tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(DataError, match="neither model.safetensors nor model.safetensors.index.json"):
        checkpoint.load_base(Llama(SMALL), SMALL, tmp_path)
    with pytest.raises(DataError, match="cannot read the base model's config"):
        checkpoint.read_shape(tmp_path / "nowhere")


def test_the_rate_falls_from_its_peak_to_zero_along_a_cosine_without_warm_up():
    factor = cosine_with_warmup(0, 1024, 0.0)  # the reference's schedule: no warm-up, down to 0
    assert factor(0) == 1.0 and factor(512) == pytest.approx(0.5) and factor(1024) == pytest.approx(0.0)
    assert factor(2000) == pytest.approx(0.0)


def test_the_real_preset_logs_what_the_official_closed_rules_require():
    cfg = compose(["model=llama2_70b_lora", "dataset=govreport", "mode=throughput", "device=cpu"])
    ctx = RunContext(cfg=cfg, data_dir=None, device=torch.device("meta"), rank=0, world_size=8, seed=1, shared_seed=1)
    logged = Llama2LoraBenchmark(ctx).hyperparameters()
    logged = {k: getattr(v, "value", v) for k, v in logged.items()}
    assert logged["global_batch_size"] == 8 and logged["max_sequence_length"] == 8192
    assert cfg.model.target == 0.925 and cfg.model.eval_every_samples == 384 and cfg.mlperf.division == "closed"
    rules = yaml.safe_load((Path(mlp_compliance.__file__).parent / "training_6.0.0" / "closed_llama2_70b_lora.yaml")
                           .read_text())
    state: dict = {}
    checked = []
    for rule in (r["KEY"] for r in rules):
        if rule["NAME"] == "eval_accuracy":
            continue
        v = {"value": logged[rule["NAME"]]}
        if "CHECK" in rule:
            assert eval(rule["CHECK"], {}, {"v": v, "s": state}), (rule["NAME"], logged[rule["NAME"]], rule["CHECK"])
            checked.append(rule["NAME"])
        if "POST" in rule:
            exec(rule["POST"], {}, {"v": v, "s": state})
    assert {r["KEY"]["NAME"] for r in rules} - set(logged) == {"eval_accuracy"}  # the run's own
    assert checked == ["lora_rank"] and logged["lora_alpha"] == 32 and logged["opt_gradient_clip_norm"] == 0.3
    assert logged["opt_learning_rate_training_steps"] == 1024 and logged["opt_adamw_weight_decay"] == 1e-4
