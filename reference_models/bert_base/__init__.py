"""BERT-base (12 layers, 768 wide, 12 heads; 110M parameters) as NVIDIA's DeepLearningExamples trains
it, throughput only: conf/model/bert_base.yaml.

    python -m harness.train model=bert_base mode=throughput precision=amp
"""
from harness.interface import SuiteEntry
from reference_models.bert import spec

SPEC = spec("bert_base", "BERT-base: SQuAD v1.1 fine-tuning or MLM+NSP pre-training, sequences/s",
            SuiteEntry(step_s=(0.03, 0.12)))  # SQuAD 384, batch 32: 6.6 TFLOP a step
