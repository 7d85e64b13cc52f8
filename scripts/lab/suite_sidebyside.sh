#!/usr/bin/env bash
# Side by side on one H200, in 45 s of wall time (every step under `timeout`, against one deadline):
#
#   source scripts/lab/device_env.sh && bash scripts/lab/suite_sidebyside.sh "$OUT"
#
# (a) Tacotron 2 at batch 128, amp and tf32: this tree's model against the previous one's
#     (.lab/base, a copy of main's tree), in one process (scripts/lab/tacotron2_versions.py): the
#     same weights, batch and harness step; 1 warm-up step (2 for the first variant), 2 windows of
#     one step each; no variant starts after 10 s, and the table is written after each. To fit the
#     budget the utterances are LJSpeech's distribution scaled to a quarter (24-218 frames, mean 142,
#     std 48): the same share of real frames in the padded batch (0.65), so mel frames/s compare with
#     the full workload's (one decoder step per padded frame either way) at a quarter of the step.
#     -> OUT/a/tacotron2.md, tacotron2.jsonl
# (b) one `python -m harness.bench` cell for tacotron2 amp, then the `python -m harness.train`
#     command that cell printed, run directly: the same seed, warm-up and window seconds, so the
#     same steps and frames; utterances at a sixth of LJSpeech's (16-145 frames) to fit three
#     process start-ups (the bench's, its cell's, the direct call's) in the rest of the budget.
#     -> OUT/b/agreement.md (and both runs' folders and logs)
set -uo pipefail
out=$(realpath -m "${1:?usage: suite_sidebyside.sh OUT_DIR}")
mkdir -p "$out/a" "$out/b"
end=$((SECONDS + 44))
left() { local s=$((end - SECONDS)); echo $((s > 1 ? s : 1)); }
upto() { local s; s=$(left); echo $(($1 < s ? $1 : s)); }   # at most $1 seconds, at most what is left
quarter="model.utterances.mel_mean=142 model.utterances.mel_std=48 model.utterances.mel_min=24 model.utterances.mel_max=218"
sixth="model.utterances.mel_mean=95 model.utterances.mel_std=32 model.utterances.mel_min=16 model.utterances.mel_max=145"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%FT%TZ; } > "$out/machine.txt" 2>&1

# (a) ~17 s: process start, then amp this/base, tf32 this/base
# shellcheck disable=SC2086
timeout "$(upto 18)" python3 scripts/lab/tacotron2_versions.py --base .lab/base --out "$out/a" \
  --precisions amp tf32 --set $quarter --warmup 1 --steps 1 --repeats 2 --budget-s 10 2>&1 | tail -n 20 > "$out/a/log.txt"

# (b) ~27 s: the bench cell, then its own command line run directly
# shellcheck disable=SC2086
timeout "$(upto 16)" python3 -m harness.bench --models tacotron2 --precisions amp --gpus 1 --window-s 0.3 \
  --warmup-s 0.3 --repeats 2 --timeout 14 --set $sixth telemetry=false --out "$out/b/bench" > "$out/b/bench.log" 2>&1
cmd=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["command"])' \
  "$out/b/bench/bench.jsonl" 2>/dev/null)
if [ -n "$cmd" ]; then
  # shellcheck disable=SC2086
  timeout "$(left)" python3 -m harness.train ${cmd#python -m harness.train } "output_root=$out/b/direct" \
    > "$out/b/direct.log" 2>&1
fi
python3 - "$out/b" <<'EOF' || true
import json, sys
from pathlib import Path
b = Path(sys.argv[1])
found = {"bench cell": list((b / "bench" / "runs").glob("*/result.json")),
         "direct call": list((b / "direct" / "runs").glob("*/result.json")) if (b / "direct" / "runs").is_dir() else []}
rows = ["| run | status | mel frames/s (median) | windows | warm-up steps | steps a window | frames a step |",
        "|---|---|---|---|---|---|---|"]
for name, paths in found.items():
    if not paths:
        rows.append(f"| {name} | not run (out of time or failed: see the logs) | | | | | |")
        continue
    r = json.loads(paths[0].read_text())
    w = [e.get("throughput") or 0 for e in r.get("epochs", [])]
    tput = r.get("throughput")
    rows.append(f"| {name} | {r.get('status')} | {tput or 0:,.0f} | {', '.join(f'{x:,.0f}' for x in w)} | "
                f"{r.get('warmup_steps')} | {r.get('throughput_steps')} | "
                f"{r.get('hyperparameters', {}).get('mel_frames_per_batch')} |")
(b / "agreement.md").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
cat "$out/a/tacotron2.md" 2>/dev/null || cat "$out/a/log.txt"
echo "done in $SECONDS s"
