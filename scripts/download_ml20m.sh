#!/usr/bin/env bash
# Fetch and unpack MovieLens ml-20m (ratings.csv and friends) for the real-scale NCF preset.
# Run it on a machine with internet access; the harness itself never downloads anything.
#
#   scripts/download_ml20m.sh outputs/datasets        # -> outputs/datasets/ml-20m/ratings.csv
#   python -m harness.train model=ncf dataset=ml20m seed=1
set -euo pipefail
dest=${1:-outputs/datasets}
url=https://files.grouplens.org/datasets/movielens/ml-20m.zip
md5=cd245b17a1ae2cc31bb14903e1204af3   # published by GroupLens for ml-20m.zip
mkdir -p "$dest"
cd "$dest"
if [ ! -f ml-20m.zip ]; then
  curl -fL --retry 3 -o ml-20m.zip.part "$url"
  mv ml-20m.zip.part ml-20m.zip
fi
echo "$md5  ml-20m.zip" | md5sum -c -
unzip -o -q ml-20m.zip
python -m reference_models.ncf.data ml-20m
