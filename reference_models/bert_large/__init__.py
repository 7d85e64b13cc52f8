"""BERT-large (24 layers, 1024 wide, 16 heads; 335M parameters) as NVIDIA's DeepLearningExamples
trains it, throughput only: conf/model/bert_large.yaml.

    python -m harness.train model=bert_large mode=throughput precision=amp
"""
from harness.interface import SuiteEntry
from reference_models.bert import spec

SPEC = spec("bert_large", "BERT-large: SQuAD v1.1 fine-tuning or MLM+NSP pre-training, sequences/s",
            SuiteEntry(step_s=(0.09, 0.40)))  # 23.7 TFLOP a step
