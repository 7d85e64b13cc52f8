"""Transformer-XL large (18 layers, d_model 1024, tgt_len = mem_len = 384, adaptive div_val 4) on
WikiText-103 as NVIDIA's wt103_large.yaml trains it, throughput only: conf/model/txl_large.yaml.

    python -m harness.train model=txl_large mode=throughput precision=amp
"""
from harness.interface import SuiteEntry
from reference_models.txl import spec

SPEC = spec("txl_large", "Transformer-XL large on WikiText-103, tokens/s",
            SuiteEntry(step_s=(0.14, 0.55)))  # 6,144 tokens a step
