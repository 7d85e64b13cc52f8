#!/usr/bin/env bash
# SSD and Mask R-CNN GPU throughput beside the plain torchvision baselines, in one device call:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/detection_gpu.sh "$OUT" one       # one GPU's rows
#   source scripts/lab/device_env.sh && bash scripts/lab/detection_gpu.sh "$OUT" two       # two GPUs' rows
#   source scripts/lab/device_env.sh && bash scripts/lab/detection_gpu.sh "$OUT"           # both (~7 min)
#   source scripts/lab/device_env.sh && bash scripts/lab/detection_gpu.sh "$OUT" harness   # the harness rows of one
#
# Every line of OUT/detection.jsonl is one measurement (the baselines print their own JSON line; the
# harness's mode=throughput runs leave result.json, summarised here); OUT/profile_maskrcnn.txt and
# OUT/profile_ssd.txt are scripts/lab/profile_step.py's tables of the harness's step. What to read:
#   maskrcnn: harness images/s vs "torchvision maskrcnn" at batch 8, 800x1216, 5 objects (goal >= 2x, >= 23 img/s)
#   ssd:      harness images/s at batch 128 with amp (goal >= 1,000 on one H200; baseline ssd300_vgg16 447)
#   2 GPUs:   the world=2 rows against world=1 (goal >= 1.9x for both models)
set -uo pipefail
out=$(realpath "${1:?usage: detection_gpu.sh OUT_DIR [one|two]}"); mkdir -p "$out"
stages=${2:-one two}
ngpu=$(python3 -c "import torch; print(torch.cuda.device_count())")
log="$out/detection.jsonl"
mkdir -p "$out/runs"
steps=(--warmup 5 --steps 20 --repeats 2)
base() { python3 scripts/lab/detection_baseline.py "$@" "${steps[@]}" >> "$log" 2>> "$out/stderr.txt"; }
base2() { torchrun --standalone --nproc_per_node=2 scripts/lab/detection_baseline.py "$@" "${steps[@]}" >> "$log" 2>> "$out/stderr.txt"; }
tput() {  # name gpus overrides...: one harness mode=throughput run, summarised as a JSON line
  local name=$1 gpus=$2; shift 2
  local root="$out/runs/$name-$gpus-$(date +%s)"
  python3 -m harness.train model="$name" dataset="${name}_coco2017" mode=throughput precision=amp gpus="$gpus" \
    seed=1 progress=false telemetry=false tensorboard=false output_root="$root" warmup_steps=5 \
    throughput_steps=20 throughput_repeats=2 "$@" > "$root.txt" 2>&1
  python3 - "$root" "$name" "$gpus" "$*" >> "$log" <<'PY'
import json, pathlib, sys
root, name, gpus, extra = sys.argv[1:]
found = list(pathlib.Path(root).rglob("result.json"))
r = json.loads(found[0].read_text()) if found else {}
print(json.dumps({"model": f"harness {name}", "world": int(gpus), "overrides": extra,
                  "images_per_s": r.get("throughput"), "status": r.get("status", "failed")}))
PY
}
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$out/machine.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__)" >> "$out/machine.txt"

if [[ $stages == *one* || $stages == *harness* ]]; then
[[ $stages == *one* ]] && base maskrcnn --batch 8 --amp
tput maskrcnn 1 model.batch_size=8
tput maskrcnn 1 model.batch_size=8 model.channels_last=true
[[ $stages == *one* ]] && base ssd300 --batch 128 --amp
tput ssd 1 model.batch_size=128
tput ssd 1 model.batch_size=128 model.channels_last=true
[[ $stages == *one* ]] || { cat "$log"; exit 0; }
python3 scripts/lab/profile_step.py model=maskrcnn dataset=maskrcnn_coco2017 precision=amp model.batch_size=8 \
  model.channels_last=true --warmup 5 --steps 10 --rows 30 > "$out/profile_maskrcnn.txt" 2>&1
python3 scripts/lab/profile_step.py model=ssd dataset=ssd_coco2017 precision=amp model.batch_size=128 \
  model.channels_last=true --warmup 5 --steps 10 --rows 30 > "$out/profile_ssd.txt" 2>&1
fi
if [[ $stages == *two* && $ngpu -ge 2 ]]; then
  base2 maskrcnn --batch 8 --amp
  tput maskrcnn 2 model.batch_size=8 model.channels_last=true
  base2 ssd300 --batch 128 --amp
  tput ssd 2 model.batch_size=128 model.channels_last=true
fi
cat "$log"
