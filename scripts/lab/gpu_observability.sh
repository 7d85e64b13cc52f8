#!/usr/bin/env bash
# Telemetry, energy to train, system.json and TensorBoard on real GPUs, in one device call:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/gpu_observability.sh "$OUT/obs"
#
# NCF and GNMT on their embedded data on one GPU, NCF again on the second GPU alone (CUDA_VISIBLE_DEVICES=1:
# telemetry must follow the GPU the run really uses, matched by UUID) and on both; then each run's
# telemetry summary, the report with its energy and power columns, and the official system
# description checker on each system.json.
set -euo pipefail
out=${1:-outputs/observability}
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
python3 -m harness.train model=ncf seed=1 output_root="$out" progress=false
python3 -m harness.train model=gnmt seed=1 output_root="$out" progress=false
if [ "$gpus" -ge 2 ]; then
  CUDA_VISIBLE_DEVICES=1 python3 -m harness.train model=ncf seed=2 output_root="$out" progress=false
  python3 -m harness.train model=ncf seed=3 gpus=2 output_root="$out" progress=false
fi
python3 - "$out" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).rglob("result.json")):
    r = json.loads(path.read_text())
    t = r.get("telemetry") or {}
    gpus = [(g["index"], g["uuid"], g.get("energy_method")) for g in t.get("gpus", [])]
    print(f"{r['model']} seed {r['seed']} {r['status']} on {r['platform']}: source {t.get('source')}, "
          f"{t.get('samples')} samples over {t.get('window_s')} s, energy {t.get('energy_j')} J, "
          f"mean power {t.get('power_mean_w')} W, util {t.get('util_mean_pct')}% (peak {t.get('util_peak_pct')}), "
          f"peak memory {t.get('memory_used_peak_mib')} MiB, throttled {t.get('throttled_fraction')}; gpus {gpus}")
PY
python3 -m harness.report "$out/runs" --md "$out/report.md" || true
for f in "$out"/runs/*/system.json; do
  python3 -m mlperf_logging.system_desc_checker "$f" training 0.7.0 --log_output "$out/system_desc.log" | tail -1
done
grep -h "checker" "$out/system_desc.log" | sort | uniq -c
