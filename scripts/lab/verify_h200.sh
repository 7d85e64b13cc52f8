#!/usr/bin/env bash
# One H200 call that checks the GPU paths CPU CI cannot reach, then measures the input pipelines
# beside their synthetic step (issue 25's table) on the code as it is:
#
#   device run, carry [".whl"], command:
#     "bash scripts/lab/verify_h200.sh $OUT"
#
# Stages (each under its own timeout; OUT/verify.md collects what each printed last, OUT/logs.tgz
# every log, OUT/pipeline.jsonl and OUT/report.md the measurements):
#   tests      the CUDA tests: the batch feed's copy stream, the GPU decoders against PIL
#   tput       python -m harness.train mode=throughput for ResNet-50 at real scale (the synthetic batch path)
#   embedded   the embedded ResNet trained on the GPU for 2 epochs, at model.workers=4 and at workers=1,
#              then harness.report over both: the data wait in result.json and the input-bound flag
#   pipeline   scripts/lab/pipeline_h200.sh for ResNet (nvimgcodec and cpu) and NCF
set -uo pipefail
out=$(realpath "${1:?usage: verify_h200.sh OUT_DIR}"); shift
cd "$(dirname "$0")/../.."
source scripts/lab/device_env.sh || exit 1
logs=/tmp/verify_logs; mkdir -p "$out" "$logs"
t0=$SECONDS
note() { echo "== $(( SECONDS - t0 )) s: $*" | tee -a "$out/verify.md"; }
runs=/tmp/verify_runs; rm -rf "$runs"

note "tests on the GPU"
timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider -o addopts="" tests/run/test_feed.py \
  tests/reference_models/resnet/test_decode.py tests/reference_models/detection/test_decode.py > "$logs/tests.log" 2>&1
echo "rc=$?; $(tail -n 1 "$logs/tests.log")" | tee -a "$out/verify.md"

note "throughput mode, ResNet-50 at real scale"
timeout 120 python3 -m harness.train model=resnet dataset=imagenet mode=throughput precision=amp \
  model.channels_last=true warmup_steps=10 throughput_steps=20 throughput_repeats=3 output_root=$runs/tput \
  > "$logs/tput.log" 2>&1
echo "rc=$?; $(grep -E 'images/s|error' "$logs/tput.log" | tail -n 2)" | tee -a "$out/verify.md"

for workers in 4 1; do
  note "embedded ResNet, 2 epochs, model.workers=$workers"
  timeout 150 python3 -m harness.train model=resnet seed=1 max_epochs=2 model.workers=$workers \
    data_root=/tmp/verify_data output_root=$runs/w$workers > "$logs/embedded_w$workers.log" 2>&1
  echo "rc=$?" | tee -a "$out/verify.md"
  python3 - "$runs/w$workers" <<'EOF' | tee -a "$out/verify.md"
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).rglob("result.json")):
    r = json.loads(p.read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    print(f"status {r['status']}, data_wait_s {r.get('data_wait_s')}, data_wait_share {r.get('data_wait_share')}, "
          f"throughput {r.get('throughput')}, decode {r.get('hyperparameters', {}).get('decode', '-')}; "
          f"epochs: {[round(e.get('data_wait_s') or 0, 3) for e in r['epochs']]}")
EOF
done
timeout 60 python3 -m harness.report $runs/w4 $runs/w1 --md "$out/report.md" > "$logs/report.log" 2>&1
echo "report rc=$?; $(grep -ci 'input-bound' "$out/report.md") lines name input-bound" | tee -a "$out/verify.md"

left=$(( ${BUDGET_S:-540} - (SECONDS - t0) ))  # what the call has left: the pipelines take the rest
note "pipelines, $left s left"
IMAGENET_IMAGES=${IMAGENET_IMAGES:-5000} NCF_USERS=${NCF_USERS:-30000} STEPS=${STEPS:-50} WARMUP=${WARMUP:-15} \
  LIMIT=${LIMIT:-170} DEADLINE=$(( left - 180 )) timeout $(( left - 15 )) bash scripts/lab/pipeline_h200.sh "$logs/pipeline" \
  resnet:nvimgcodec resnet:cpu ncf > "$logs/pipeline.log" 2>&1
cat "$logs/pipeline/pipeline.md" >> "$out/verify.md" 2>/dev/null
cp "$logs/pipeline/pipeline.jsonl" "$out/" 2>/dev/null
note "done"
tar czf "$out/logs.tgz" -C /tmp verify_logs 2>/dev/null
