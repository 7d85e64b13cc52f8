"""Llama 2 70B's shape, as the MLPerf LoRA reference fine-tunes it; the decoder itself is the shared one
(reference_models/llama/model.py), LoRA's adapters are lora.py's.

    python -c "from reference_models.llama2_70b_lora.model import LLAMA2_70B; from reference_models.llama.model import parameter_count; print(parameter_count(LLAMA2_70B))"
"""
from __future__ import annotations

from reference_models.llama.model import LlamaShape

# Llama 2 70B (Meta's params.json; the reference's Llama2-70b-fused-qkv-mlperf config.json): 32,000-token
# SentencePiece vocabulary, width 8192, 80 blocks, 64 query and 8 key/value heads, SwiGLU of 28,672, RoPE base
# 10,000 without frequency scaling; the reference runs it at 8,192 tokens (max_position_embeddings=8192)
LLAMA2_70B = LlamaShape(vocab_size=32000, dim=8192, layers=80, heads=64, kv_heads=8, ffn_dim=28672, max_seq_len=8192,
                        rope_theta=10000.0, rope_scaling=None, fused_qkv=True)
