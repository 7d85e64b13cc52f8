#!/usr/bin/env bash
# Every scripts/lab/*_sidebyside.sh in one device call: the previous implementation (a copy of the tree
# it is compared with, at .lab/base) and this tree, side by side on one H200, each script under its own
# time limit, its tables under OUT/<name>/ and its console output in OUT/<name>.txt; first the tests
# whose CUDA branches only a GPU runs. The device tool brings back only a few files a call, so
# everything ends up in one archive, OUT/sidebyside.tgz (`tar xzf` it here).
#
#   mkdir -p .lab/base && git archive <previous commit> | tar -x -C .lab/base    # the baseline tree
#   bash scripts/lab/sidebyside_h200.sh "$OUT"      # on the device: carry [".whl", ".lab"]
set -u
OUT=${1:?usage: sidebyside_h200.sh OUT}
PER_S=${PER_S:-52}
FEED_S=${FEED_S:-75}  # feed_sidebyside.sh writes its datasets first: FEED_GEN_S=40 of its 75 s
export FEED_GEN_S=${FEED_GEN_S:-40}
ORDER=${ORDER:-"maskrcnn attn suite feed"}  # the most awaited first: a call cut short keeps those
mkdir -p "$OUT"
source scripts/lab/device_env.sh || { echo "wheels did not install" >&2; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; } > "$OUT/machine.txt" 2>&1
test -d .lab/base || { echo "no .lab/base: the baseline tree must be carried" >&2; exit 1; }
timeout -k 3 40 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/reference_models/ssd/test_encode.py \
  tests/run/test_feed.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests: exit $?" | tee -a "$OUT/summary.txt"
for name in $ORDER; do
  start=$(date +%s)
  limit=$PER_S; [ "$name" = feed ] && limit=$FEED_S
  timeout -k 3 "$limit" bash "scripts/lab/${name}_sidebyside.sh" "$OUT/$name" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
done
(cd "$OUT" && tar czf /tmp/sidebyside.tgz . && find . -mindepth 1 -delete && mv /tmp/sidebyside.tgz .)
