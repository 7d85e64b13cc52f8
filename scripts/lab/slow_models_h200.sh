#!/usr/bin/env bash
# Issue 27's models, each as `python -m harness.train model=M mode=throughput` measures it, one after the
# other on one H200 in one call, every run under `timeout` and the call under one deadline, then
# torch.profiler tables of the models named in PROFILE while time is left:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/slow_models_h200.sh "$OUT" [VARIANT...]
#
# VARIANT names one row below (default: all, in this order); each row is a model, a precision and the
# options it adds. OUT/slow_models.md gets one row per run (median of 3 windows, the windows' range,
# steps a window), OUT/runs/<variant>/ the run's folder, OUT/<variant>.log its console.
# Environment: DEADLINE (seconds into the call after which no run starts; default 470), WINDOW_S and
# WARMUP_S (the windows; default 2 and 3), PROFILE (variants to profile with scripts/tools/profile_step.py
# after the runs, default none).
set -uo pipefail
out=$(realpath -m "${1:?usage: slow_models_h200.sh OUT_DIR [VARIANT...]}"); shift
mkdir -p "$out/runs"
deadline=${DEADLINE:-470}; window=${WINDOW_S:-2}; warm=${WARMUP_S:-3}; t0=$SECONDS
common="mode=throughput gpus=1 device=cuda progress=false tensorboard=false telemetry=false seed=1 warmup_steps=2"
declare -A V=(
  [tacotron2_amp]="model=tacotron2 precision=amp"
  [tacotron2_tf32]="model=tacotron2 precision=tf32"
  [tacotron2_amp_compile]="model=tacotron2 precision=amp model.compile=true"
  [bert_large_amp]="model=bert_large precision=amp"
  [bert_large_amp_compile]="model=bert_large precision=amp model.compile=true"
  [bert_large_amp_compile_ro]="model=bert_large precision=amp model.compile=true model.compile_mode=reduce-overhead"
  [txl_base_amp]="model=txl_base precision=amp"
  [txl_base_amp_compile]="model=txl_base precision=amp model.compile=true"
  [txl_base_amp_compile_ro]="model=txl_base precision=amp model.compile=true model.compile_mode=reduce-overhead"
  [txl_large_amp]="model=txl_large precision=amp"
  [txl_large_amp_compile]="model=txl_large precision=amp model.compile=true"
  [maskrcnn_b8_amp]="model=maskrcnn dataset=maskrcnn_coco2017 precision=amp model.batch_size=8 model.channels_last=true"
  [maskrcnn_b8_amp_compile]="model=maskrcnn dataset=maskrcnn_coco2017 precision=amp model.batch_size=8 model.channels_last=true model.compile=true"
  [txl_large_amp_compile_ro]="model=txl_large precision=amp model.compile=true model.compile_mode=reduce-overhead"
  [gnmt_b2048_amp]="model=gnmt dataset=wmt16 precision=amp master_weights=true model.batch_size=2048 model.compile_attention=true"
  [waveglow_amp]="model=waveglow precision=amp"
  # cuda_graph=true: the forward and backward replayed from one CUDA graph (harness/run/graph.py)
  [tacotron2_amp_graph]="model=tacotron2 precision=amp cuda_graph=true"
  [tacotron2_tf32_graph]="model=tacotron2 precision=tf32 cuda_graph=true"
  [txl_base_amp_graph]="model=txl_base precision=amp cuda_graph=true"
  [txl_base_amp_compile_graph]="model=txl_base precision=amp model.compile=true cuda_graph=true"
  [txl_large_amp_compile_graph]="model=txl_large precision=amp model.compile=true cuda_graph=true"
  [bert_large_amp_compile_graph]="model=bert_large precision=amp model.compile=true cuda_graph=true"
  [gnmt_b2048_amp_graph]="model=gnmt dataset=wmt16 precision=amp master_weights=true model.batch_size=2048 model.compile_attention=true cuda_graph=true"
  [waveglow_amp_graph]="model=waveglow precision=amp cuda_graph=true"
)
# a model with a dataset runs at its real dataset's config (no data is read in throughput mode): without
# dataset=, its embedded preset's scaled-down sizes would be measured (Mask R-CNN's 128-160 px images)
order=(tacotron2_amp tacotron2_tf32 bert_large_amp txl_base_amp txl_large_amp maskrcnn_b8_amp gnmt_b2048_amp
  waveglow_amp bert_large_amp_compile txl_base_amp_compile tacotron2_amp_compile txl_large_amp_compile)
[ $# -gt 0 ] && order=("$@")
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; } > "$out/machine.txt" 2>&1
[ -e "$out/slow_models.md" ] || printf '| variant | options | throughput (median of windows) | windows | steps a window | wall s |\n|---|---|---|---|---|---|\n' > "$out/slow_models.md"
for v in "${order[@]}"; do
  opts=${V[$v]:-}
  [ -n "$opts" ] || { echo "| $v | unknown variant | | | | |" >> "$out/slow_models.md"; continue; }
  # each row is exactly its options: the model's default fast path stays off unless the row graphs
  [[ $opts == *cuda_graph=true* ]] || opts="$opts eager=true"
  if [ $((SECONDS - t0)) -gt "$deadline" ]; then echo "| $v | $opts | not run: past the call's deadline | | | |" >> "$out/slow_models.md"; continue; fi
  start=$SECONDS
  # shellcheck disable=SC2086
  timeout -k 3 150 python3 -m harness.train $common $opts warmup_s=$warm throughput_window_s=$window \
    throughput_repeats=3 output_root="$out/runs/$v" > "$out/$v.log" 2>&1
  rc=$?
  python3 - "$out" "$v" "$opts" "$rc" $((SECONDS - start)) <<'EOF' >> "$out/slow_models.md"
import json, pathlib, statistics, sys
out, v, opts, rc, wall = sys.argv[1:]
found = sorted(pathlib.Path(out, "runs", v).glob("**/result.json"))
if not found:
    tail = [l for l in pathlib.Path(out, v + ".log").read_text(errors="replace").splitlines() if l.strip()][-1:]
    print(f"| {v} | {opts} | exit {rc}: {(tail or [''])[0][:160]} | | | {wall} |"); sys.exit()
r = json.loads(found[-1].read_text())
win = [e["throughput"] for e in r.get("epochs", []) if e.get("throughput")]
rng = f"{min(win):,.0f}-{max(win):,.0f}" if win else ""
med = f"{statistics.median(win):,.0f} {r.get('throughput_unit', '')}" if win else f"{r.get('status')}: {r.get('error') or r.get('reason')}"
print(f"| {v} | {opts} | {med} | {rng} | {r.get('throughput_steps')} | {wall} |")
EOF
  tail -n 1 "$out/slow_models.md"
done
for v in ${PROFILE:-}; do
  [ $((SECONDS - t0)) -gt "$deadline" ] && { echo "profile $v: past the deadline" >> "$out/profiles.txt"; continue; }
  # shellcheck disable=SC2086
  timeout -k 3 90 python3 scripts/tools/profile_step.py ${V[$v]} --warmup 3 --steps 3 --rows 30 > "$out/profile_$v.txt" 2>&1
done
cat "$out/slow_models.md"
