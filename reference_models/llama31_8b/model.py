"""Llama 3.1 8B's shape; the decoder itself is the shared one (reference_models/llama/model.py).

    python -c "from reference_models.llama31_8b.model import LLAMA31_8B; from reference_models.llama.model import parameter_count; print(parameter_count(LLAMA31_8B))"
"""
from __future__ import annotations

from reference_models.llama.model import LlamaShape

# Llama 3.1 8B (Meta's params.json; the MLPerf reference's Llama31Config8B at sequence length 8192)
LLAMA31_8B = LlamaShape(vocab_size=128256, dim=4096, layers=32, heads=32, kv_heads=8, ffn_dim=14336, max_seq_len=8192)
