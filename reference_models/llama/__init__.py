"""The Llama decoder the Llama benchmarks share; no model of its own (harness/registry.py lists none here).

- model.py: the decoder (RMSNorm, RoPE with or without Llama 3.1's frequency scaling, grouped-query
  attention with separate or fused query/key/value projections, SwiGLU), `LlamaShape` and the
  parameter count on the meta device;
- parallel.py: FSDP2 (`fully_shard` per block, then the root), activation checkpointing per block,
  FSDP's bf16 MixedPrecisionPolicy, and the weight-decay split.

Each benchmark keeps its own part: reference_models/llama31_8b/ (pretraining on C4: Llama 3.1 8B's
shape, its data and tokenizer), reference_models/llama2_70b_lora/ (LoRA fine-tuning on GovReport:
Llama 2 70B's shape, the adapters, the packed-token data and the base checkpoint).
"""
