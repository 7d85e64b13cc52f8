#!/usr/bin/env bash
# One harness.train command in two trees, alternated in one call, so that a change is measured beside the code
# before it on the same machine and lease: the tree before it (a `git archive` of its commit, carried as the
# git-ignored .base/) and this tree, ROUNDS times each (default 2), each its own process under LIMIT seconds
# (default 120). Each row's console goes to OUT/<tree><round>.log; OUT/rows.txt holds each THROUGHPUT, SUCCESS,
# ABORTED, FAILED or error line in the order run.
#
#   rm -rf .base && mkdir .base && git archive main | tar -x -C .base          # here: the tree before the change
#   # device call, carry [".whl", ".base"]:
#   source scripts/lab/device_env.sh && bash scripts/lab/side_by_side.sh $OUT/s model=resnet dataset=imagenet \
#       mode=throughput model.batch_size=256 warmup_s=3 throughput_window_s=2 throughput_repeats=3
#
# SCRIPT=path runs that script of each tree (its own copy, with the arguments given) in place of harness.train,
# and `{tree}` in an argument becomes the row's name (base1, new1, ...): the input pipeline's benchmark, e.g.
#
#   SCRIPT=scripts/tools/pipeline_bench.py bash scripts/lab/side_by_side.sh $OUT/p model=resnet dataset=imagenet \
#       dataset.path=/tmp/pd/inet500 model.num_classes=1000 model.batch_size=256 model.decode=nvimgcodec \
#       model.workers=12 --label {tree} --target 0.95 --json $OUT/p/p.jsonl --table $OUT/p/p.md
#
# ROW=<cell> puts a GPU check throughput cell's own arguments first (scripts/lab/gpu_check_rows.py: its dataset, batch,
# overrides and windows, exactly as the check runs it), any given after them added:
#
#   ROW=dlrm_dcnv2 ROUNDS=3 bash scripts/lab/side_by_side.sh $OUT/d
#
# The base tree runs with its own folder first on PYTHONPATH (and /tmp/site's wheels behind it, as
# device_env.sh sets them), from its own folder, so its harness, models and presets are the ones imported.
set -uo pipefail
out=${1:?usage: [ROW=cell] side_by_side.sh OUT harness.train-overrides...}; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
base="$here/.base"
[ -d "$base/harness" ] || { echo "side_by_side.sh: no tree at $base: make it with git archive (see the header)" >&2; exit 2; }
for dir in "$base" "$here"; do
  [ -z "${SCRIPT:-}" ] || [ -f "$dir/$SCRIPT" ] || { echo "side_by_side.sh: SCRIPT=$SCRIPT is not a file of $dir: give its path from the repository's root" >&2; exit 2; }
done
if [ -n "${ROW:-}" ]; then
  cell=$(python3 "$here/scripts/lab/gpu_check_rows.py" "$ROW") || exit 2
  mapfile -t row <<< "$cell"
  set -- "${row[@]}" "$@"
fi
mkdir -p "$out"
site=${SITE:-/tmp/site}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for tree in base new; do
    dir=$here; [ "$tree" = base ] && dir=$base
    log="$out/$tree$round.log"
    echo "== $tree $round $(date -u +%T)" >> "$out/rows.txt"
    args=("${@//\{tree\}/$tree$round}")
    if [ -n "${SCRIPT:-}" ]; then
      cmd=(python3 "$dir/$SCRIPT" "${args[@]}")
    else
      cmd=(python3 -m harness.train "${args[@]}" output_root="/tmp/side_by_side/$tree$round")
    fi
    (cd "$dir" && PYTHONPATH="$dir:$site" timeout -k 5 "${LIMIT:-120}" "${cmd[@]}" > "$log" 2>&1)
    echo "rc=$?" >> "$out/rows.txt"
    grep -E "^(THROUGHPUT|SUCCESS|ABORTED|FAILED|real / synthetic)|error" "$log" | tail -3 >> "$out/rows.txt"
  done
done
cat "$out/rows.txt"
