"""WaveGlow on LJSpeech as NVIDIA's DeepLearningExamples trains it, throughput only (audio samples/s):
conf/model/waveglow.yaml.

    python -m harness.train model=waveglow mode=throughput precision=amp
"""
from harness.interface import FastPath, ModelSpec, SuiteEntry, lazy
from harness.interface.suite import SPEECH
from reference_models.waveglow.options import WaveGlowOptions


SPEC = ModelSpec(name="waveglow", options=WaveGlowOptions, sample_unit="samples",
                 build=lazy("reference_models.waveglow.benchmark:WaveGlowBenchmark"),
                 summary="WaveGlow mel-to-audio flow on LJSpeech shapes, audio samples/s", category=SPEECH,
                 suite=SuiteEntry(step_s=(0.15, 0.50)),  # 80,000 samples a step
                 # twelve coupling networks of small convolutions: bound by launches, eager
                 fast=FastPath(cuda_graph=True, measured="docs/benchmarks/fast_path_2026-12-01.md"))
