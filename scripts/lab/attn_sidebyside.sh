#!/usr/bin/env bash
# Transformer-XL, BERT-large and WaveGlow on one H200: the previous implementation (.lab/base, a copy
# of main's tree) and this tree side by side, amp, synthetic batches, within 45 s of wall time:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/attn_sidebyside.sh "$OUT"
#
# One python process (scripts/lab/attn_sidebyside.py: what it measures and how) steps txl_base (batch
# 32), bert_large (SQuAD 384, batch 32) and waveglow (batch 10), then, while its 30 s budget lasts,
# waveglow at batch 24 and txl_large (batch 16). Outputs: OUT/attn_sidebyside.md (the table),
# OUT/attn_sidebyside.json (every window), OUT/attn_sidebyside.log; written after each workload, so
# what finished before the 44 s timeout is kept.
set -uo pipefail
out=$(realpath -m "${1:?usage: attn_sidebyside.sh OUT_DIR}")
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
base="$here/.lab/base"
[ -d "$base/harness" ] || { echo "attn_sidebyside: no previous tree at $base (a copy of main's tree)" >&2; exit 2; }
timeout -k 2 44 python3 "$here/scripts/lab/attn_sidebyside.py" --base "$base" --out "$out" --budget 30 \
  2>&1 | tee "$out/attn_sidebyside.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "attn_sidebyside: cut at 44 s; the table holds the workloads that finished" | tee -a "$out/attn_sidebyside.log"
exit "$rc"
