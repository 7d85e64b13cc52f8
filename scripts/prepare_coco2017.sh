#!/usr/bin/env bash
# COCO 2017 for model=ssd and model=maskrcnn, from the three official archives a user already has
# (train2017.zip, val2017.zip, annotations_trainval2017.zip, from cocodataset.org): checks their MD5
# sums, unpacks them into one folder in the layout both MLPerf references read, and checks the result
# with the harness's own loader.
#
#   scripts/prepare_coco2017.sh /path/to/archives outputs/datasets/coco2017
#   python -m harness.train model=ssd dataset=ssd_coco2017 seed=1
#   python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 seed=1
#
# The folder then holds annotations/instances_{train,val}2017.json, train2017/ (118,287 images) and
# val2017/ (5,000 images). The backbones start from ImageNet weights as the references do:
# torchvision's resnet34-333f7ec4.pth (model.backbone_weights for SSD) and resnet50-0676ba61.pth (for
# Mask R-CNN), fetched by the user with the archives.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 ARCHIVE_DIR OUTPUT_DIR" >&2
  exit 2
fi
archives=$1
out=$2
declare -A md5=(
  [train2017.zip]=cced6f7f71b7629ddf16f17bbcfab6b2
  [val2017.zip]=442b8da7639aecaf257c1dceb8ba8c80
  [annotations_trainval2017.zip]=f4bbac642086de4f52a3fdda2de5fa2c
)
for name in train2017.zip val2017.zip annotations_trainval2017.zip; do
  if [[ ! -f "$archives/$name" ]]; then
    echo "$archives/$name is missing: put the three COCO 2017 archives in $archives" >&2
    exit 1
  fi
  echo "checking $name"
  echo "${md5[$name]}  $archives/$name" | md5sum -c --quiet - || {
    echo "$archives/$name has another MD5 sum than the official archive: download it again" >&2
    exit 1
  }
done
mkdir -p "$out"
for name in annotations_trainval2017.zip val2017.zip train2017.zip; do
  echo "unpacking $name into $out"
  unzip -q -o "$archives/$name" -d "$out"
done
python - "$out" <<'PY'
import sys
from reference_models.detection.coco import CocoSplit
for split in ("train", "val"):
    s = CocoSplit(sys.argv[1], split)
    print(f"{split}2017: {len(s)} images, {s.num_classes - 1} categories")
PY
