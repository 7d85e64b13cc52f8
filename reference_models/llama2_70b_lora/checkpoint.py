"""The frozen base model as the reference reads it: a Hugging Face Llama folder, config.json and its
weights in safetensors files (model.safetensors, or shards that model.safetensors.index.json maps), with
the query, key and value projections fused (self_attn.qkv_proj.weight: their rows one after the other, as
the reference's Llama2-70b-fused-qkv-mlperf) or separate (q_proj, k_proj, v_proj, as meta-llama/Llama-2-70b-hf).

    python -c "from reference_models.llama2_70b_lora.checkpoint import read_shape; print(read_shape('base'))"

Hugging Face stores the query and key rows of each head permuted for its rotate-half rotary code; the
shared decoder rotates Meta's (even, odd) pairs, so those rows are put back in Meta's order on reading and
permuted again on writing (the inverse of transformers' convert_llama_weights_to_hf.py permute). A sharded
model (FSDP2) gets each rank's rows of every weight through distribute_tensor; safetensors' safe_open reads
one tensor at a time, so a 70B checkpoint is never whole in memory.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from harness.interface import DataError
from reference_models.llama.model import LlamaShape
from reference_models.llama2_70b_lora.lora import assign

CONFIG, SINGLE, INDEX = "config.json", "model.safetensors", "model.safetensors.index.json"


class CheckpointError(DataError):
    """A base model folder that cannot be read; the message names the file."""


def read_shape(folder: str | Path, max_seq_len: int = 0, fused_qkv: bool = True) -> LlamaShape:
    """The decoder's shape from config.json (Hugging Face's LlamaConfig keys); the context is
    max_seq_len where given (the reference passes max_position_embeddings=8192), else the file's."""
    path = Path(folder) / CONFIG
    try:
        config = json.loads(path.read_text())
        if config.get("rope_scaling"):
            raise CheckpointError(f"{path}: rope_scaling {config['rope_scaling']}: Llama 2 has none, and this "
                                  "model reads only plain RoPE checkpoints")
        return LlamaShape(vocab_size=int(config["vocab_size"]), dim=int(config["hidden_size"]),
                          layers=int(config["num_hidden_layers"]), heads=int(config["num_attention_heads"]),
                          kv_heads=int(config.get("num_key_value_heads", config["num_attention_heads"])),
                          ffn_dim=int(config["intermediate_size"]),
                          max_seq_len=max_seq_len or int(config.get("max_position_embeddings", 4096)),
                          norm_eps=float(config.get("rms_norm_eps", 1e-5)),
                          rope_theta=float(config.get("rope_theta", 10000.0)), rope_scaling=None, fused_qkv=fused_qkv)
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read the base model's config ({err.strerror}): point model.base "
                              "at a Hugging Face Llama folder (config.json and *.safetensors)") from None
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path}: not a Llama config.json ({type(err).__name__}: {err})") from None


def _files(folder: Path) -> dict[str, Path]:
    """{tensor name: safetensors file holding it}."""
    index = folder / INDEX
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (ValueError, KeyError) as err:
            raise CheckpointError(f"{index}: not a safetensors index ({err})") from None
        return {name: folder / file for name, file in weight_map.items()}
    if not (folder / SINGLE).is_file():
        raise CheckpointError(f"{folder}: neither {SINGLE} nor {INDEX}: not a Hugging Face safetensors checkpoint")
    with safe_open(str(folder / SINGLE), framework="pt") as f:
        return {name: folder / SINGLE for name in f.keys()}


def _unpermute(w: torch.Tensor, heads: int) -> torch.Tensor:
    """Hugging Face's rotate-half row order of a query or key projection back to Meta's pairs."""
    return w.view(heads, 2, w.shape[0] // heads // 2, w.shape[1]).transpose(1, 2).reshape(w.shape)


def _permute(w: torch.Tensor, heads: int) -> torch.Tensor:
    return w.view(heads, w.shape[0] // heads // 2, 2, w.shape[1]).transpose(1, 2).reshape(w.shape)


def _hf_names(shape: LlamaShape) -> Iterator[tuple[str, str]]:
    """(this decoder's parameter, Hugging Face's tensor) for every weight but the attention's q/k/v."""
    yield "tok_embeddings.weight", "model.embed_tokens.weight"
    yield "norm.weight", "model.norm.weight"
    yield "output.weight", "lm_head.weight"
    for i in range(shape.layers):
        hf, own = f"model.layers.{i}.", f"layers.{i}."
        yield own + "attention_norm.weight", hf + "input_layernorm.weight"
        yield own + "ffn_norm.weight", hf + "post_attention_layernorm.weight"
        yield own + "attention.wo.weight", hf + "self_attn.o_proj.weight"
        yield own + "feed_forward.w1.weight", hf + "mlp.gate_proj.weight"
        yield own + "feed_forward.w2.weight", hf + "mlp.down_proj.weight"
        yield own + "feed_forward.w3.weight", hf + "mlp.up_proj.weight"


def _base_name(name: str) -> str:
    """A parameter's name without the adapters' or the activation checkpointing's wrapping
    (layers.0._checkpoint_wrapped_module.attention.wqkv.base.weight is layers.0.attention.wqkv.weight)."""
    return name.replace("_checkpoint_wrapped_module.", "").replace(".base.", ".")


def load_base(model: nn.Module, shape: LlamaShape, folder: str | Path) -> None:
    """Copy the checkpoint's weights into every base parameter of `model` (plain or FSDP2-sharded, adapters
    or not); a missing tensor or a shape that differs is a CheckpointError."""
    folder = Path(folder)
    files = _files(folder)
    params = {_base_name(n): p for n, p in model.named_parameters() if ".lora_" not in n}
    handles: dict[Path, object] = {}

    def read(name: str) -> torch.Tensor:
        if name not in files:
            raise CheckpointError(f"{folder}: no tensor {name}: not a Llama checkpoint of this shape")
        path = files[name]
        if path not in handles:
            handles[path] = safe_open(str(path), framework="pt")
        return handles[path].get_tensor(name)  # type: ignore[attr-defined]

    hd = shape.head_dim
    with torch.no_grad():
        for own, hf in _hf_names(shape):
            _copy(params.pop(own), read(hf), own, folder)
        for i in range(shape.layers):
            prefix = f"model.layers.{i}.self_attn."
            if prefix + "qkv_proj.weight" in files:
                q, k, v = read(prefix + "qkv_proj.weight").split(
                    [shape.heads * hd, shape.kv_heads * hd, shape.kv_heads * hd])
            else:
                q, k, v = (read(prefix + f"{p}_proj.weight") for p in "qkv")
            q, k = _unpermute(q, shape.heads), _unpermute(k, shape.kv_heads)
            own = f"layers.{i}.attention."
            if shape.fused_qkv:
                _copy(params.pop(own + "wqkv.weight"), torch.cat([q, k, v]), own + "wqkv.weight", folder)
            else:
                for p, w in zip("qkv", (q, k, v)):
                    _copy(params.pop(own + f"w{p}.weight"), w, own + f"w{p}.weight", folder)
    if params:
        raise CheckpointError(f"{folder}: nothing for {sorted(params)[0]} ({len(params)} parameters left)")


def _copy(param: torch.Tensor, value: torch.Tensor, name: str, folder: Path) -> None:
    if tuple(value.shape) != tuple(param.shape):
        raise CheckpointError(f"{folder}: {name} is {tuple(value.shape)} in the checkpoint, {tuple(param.shape)} "
                              "in the model its config.json describes")
    assign(param, value)  # an FSDP2 shard takes this rank's rows of the whole tensor


def save_base(model: nn.Module, shape: LlamaShape, folder: str | Path) -> None:
    """`model`'s base weights as a Hugging Face Llama folder (config.json, model.safetensors) with a fused
    qkv_proj, as the reference's checkpoint: what the embedded dataset's generator writes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    params = {_base_name(n): p.detach().float().cpu() for n, p in model.named_parameters() if ".lora_" not in n}
    tensors = {hf: params[own].contiguous() for own, hf in _hf_names(shape)}
    hd = shape.head_dim
    for i in range(shape.layers):
        own = f"layers.{i}.attention."
        if shape.fused_qkv:
            q, k, v = params[own + "wqkv.weight"].split([shape.heads * hd, shape.kv_heads * hd, shape.kv_heads * hd])
        else:
            q, k, v = (params[own + f"w{p}.weight"] for p in "qkv")
        fused = torch.cat([_permute(q, shape.heads), _permute(k, shape.kv_heads), v])
        tensors[f"model.layers.{i}.self_attn.qkv_proj.weight"] = fused.contiguous()
    save_file(tensors, str(folder / SINGLE), metadata={"format": "pt"})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
              "vocab_size": shape.vocab_size, "hidden_size": shape.dim, "num_hidden_layers": shape.layers,
              "num_attention_heads": shape.heads, "num_key_value_heads": shape.kv_heads,
              "intermediate_size": shape.ffn_dim, "max_position_embeddings": shape.max_seq_len,
              "rms_norm_eps": shape.norm_eps, "rope_theta": shape.rope_theta, "rope_scaling": None,
              "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2}
    (folder / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
