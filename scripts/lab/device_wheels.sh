#!/usr/bin/env bash
# Put, in .whl/, the pure-Python wheels that the H200 machines' image lacks (it has torch, numpy,
# pandas, scipy, pyyaml, sacrebleu, tensorboard, nvidia-ml-py): hydra-core, omegaconf,
# antlr4-python3-runtime 4.9.3 (hydra's parser generator; PyPI has only its source), mlperf-logging
# sacremoses and pytest-timeout (the GPU tests run under their per-test limit); for SSD and Mask R-CNN also pycocotools; for model.decode=nvimgcodec nvImageCodec and
# nvJPEG built for CUDA 13.0 (the image's torch 2.11+cu130); torchvision only when TORCHVISION names a
# release (the image has 0.26.0, the one made for torch 2.11); torchao 0.18.0 (fp8=true; the release for
# torch 2.11); safetensors (Llama 2 70B LoRA's base
# checkpoint); pyarrow (its parquet data) only when PYARROW names a release: its 42 MB wheel and
# nvImageCodec's 25 MB pass the carry's 64 MiB, so PYARROW leaves nvImageCodec and nvJPEG out; cuDNN's
# Python frontend (its graph API, 2 MB) only when CUDNN_FRONTEND names a release, for
# scripts/tools/conv_bn_fusion_probe.py (1.16.0: later releases require CUTLASS's DSL, 100s of MB).
# Built for CPython 3.12 on x86-64 Linux.
# Run it here, where pip reaches PyPI; .whl/ is git-ignored and carried to the device:
#
#   scripts/lab/device_wheels.sh
#   device run, carry [".whl"], command: "source scripts/lab/device_env.sh && python3 -m harness.train ..."
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
  -d .whl hydra-core==1.3.2 omegaconf==2.3.0 mlperf-logging==4.1.68 sacremoses==0.2.0 pytest-timeout==2.4.0
python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d .whl pycocotools==2.0.11 safetensors==0.7.0 \
  torchao==0.18.0 \
  ${TORCHVISION:+"torchvision==$TORCHVISION"} ${CUDNN_FRONTEND:+"nvidia-cudnn-frontend==$CUDNN_FRONTEND"} \
  $(if [ -n "${PYARROW:-}" ]; then echo "pyarrow==$PYARROW"; else echo nvidia-nvimgcodec-cu13==0.9.0.20 nvidia-nvjpeg==13.0.4.44; fi)
ls -1 .whl
