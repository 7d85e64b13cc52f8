#!/usr/bin/env bash
# The input pipelines of main (.lab/base, a copy of main's tree) and of this tree side by side on one
# H200, in 45 s of wall time, for the models whose feed this tree changes (ResNet first):
#
#   device run (nvidia-h200), the tree with .lab/base beside it and .whl/ carried:
#     bash scripts/lab/feed_sidebyside.sh $OUT/feed
#
# writes OUT/feed_sidebyside.md (the table), OUT/feed_sidebyside.json (every figure) and OUT/logs/.
# Datasets are written in the call under /tmp/feed_data, on every core, while torch starts in the
# measuring process (scripts/lab/feed_sidebyside.py): 1,800 ImageNet-size JPEGs and 384 COCO-size
# images (scripts/lab/pipeline_datasets.py), NCF's ml-20m-format file of 3,000 users and GNMT's
# embedded corpus (their models' generators). Every step runs under `timeout`; a model that would not
# finish before the 43rd second is skipped for both trees and named in the table. FEED_GEN_S (default
# 14) is what the datasets may take: on 2026-12-01's H200 none was written in 14 s, so give them 40
# (`FEED_GEN_S=40`, and 75 s for the whole script) or write them in a call of their own (FEED_DATA
# names a folder that already holds them).
set -uo pipefail
start=$(date +%s.%N)
out=$(realpath -m "${1:?usage: feed_sidebyside.sh OUT_DIR}")
cd "$(dirname "$0")/../.."
mkdir -p "$out/logs"
base=${FEED_BASE:-.lab/base}
if [ ! -e "$base/scripts/lab/pipeline_bench.py" ]; then
  echo "no previous tree at $base (a copy of main's tree): nothing to compare with" | tee "$out/feed_sidebyside.md"; exit 2
fi
# hydra, omegaconf and mlperf-logging come as wheels; install them unless the caller's environment has them
python3 -c "import hydra, omegaconf, mlperf_logging" 2>/dev/null || source scripts/lab/device_env.sh || exit 1
data=${FEED_DATA:-/tmp/feed_data}; mkdir -p "$data"
left() { python3 -c "import time; print(max(1, int($1 - (time.time() - $start))))"; }
gen_s=${FEED_GEN_S:-14}
gen=$(left "$gen_s")
[ -e "$data/inet500/DONE" ] || timeout "$gen" python3 scripts/lab/pipeline_datasets.py imagenet "$data/inet500" \
  --images 1800 --val-images 20 > "$out/logs/imagenet.log" 2>&1 &
[ -e "$data/coco640/DONE" ] || timeout "$gen" python3 scripts/lab/pipeline_datasets.py coco "$data/coco640" \
  --images 384 --val-images 16 > "$out/logs/coco.log" 2>&1 &
timeout "$gen" python3 scripts/lab/feed_sidebyside.py "$out" --data "$data" --prepare ncf gnmt \
  > "$out/logs/prepare.log" 2>&1 && touch "$data/ncf/READY" "$data/gnmt_embedded/READY" &
timeout "$(left $((gen_s + 30)))" python3 scripts/lab/feed_sidebyside.py "$out" resnet ssd ncf gnmt --base "$base" \
  --data "$data" --t0 "$start" --deadline $((gen_s + 29)) --wait-for "$data/inet500/DONE" "$data/coco640/DONE" "$data/ncf/READY" \
  "$data/gnmt_embedded/READY" > "$out/logs/sidebyside.log" 2>&1
echo "rc=$? after $(python3 -c "import time; print(round(time.time() - $start, 1))") s" >> "$out/logs/sidebyside.log"
wait
tail -n 1 "$out/logs/sidebyside.log"
cat "$out/feed_sidebyside.md" 2>/dev/null
