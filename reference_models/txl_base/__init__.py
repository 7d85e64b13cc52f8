"""Transformer-XL base (16 layers, d_model 512, tgt_len = mem_len = 192) on WikiText-103 as NVIDIA's
wt103_base.yaml trains it, throughput only: conf/model/txl_base.yaml.

    python -m harness.train model=txl_base mode=throughput precision=amp
"""
from harness.interface import SuiteEntry
from reference_models.txl import spec

SPEC = spec("txl_base", "Transformer-XL base on WikiText-103, tokens/s",
            SuiteEntry(step_s=(0.05, 0.15)))  # 6,144 tokens a step
