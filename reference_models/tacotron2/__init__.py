"""Tacotron 2 on LJSpeech as NVIDIA's DeepLearningExamples trains it, throughput only (mel frames/s):
conf/model/tacotron2.yaml.

    python -m harness.train model=tacotron2 mode=throughput precision=amp
"""
from harness.interface import FastPath, ModelSpec, SuiteEntry, lazy
from harness.interface.suite import SPEECH
from reference_models.tacotron2.options import Tacotron2Options


SPEC = ModelSpec(name="tacotron2", options=Tacotron2Options, sample_unit="mel frames",
                 build=lazy("reference_models.tacotron2.benchmark:Tacotron2Benchmark"),
                 summary="Tacotron 2 text-to-mel on LJSpeech shapes, mel frames/s", category=SPEECH,
                 suite=SuiteEntry(step_s=(0.55, 0.80)),  # ~870 decoder steps of small kernels
                 # the decoder launches ~100 small kernels a mel frame: one replay launches them all
                 fast=FastPath(cuda_graph=True, measured="docs/benchmarks/fast_path_2026-12-01.md"))
