#!/usr/bin/env bash
# Transformer-big throughput on H200s beside the plain nn.Transformer baseline, in stages (the device
# tool's nvidia-h200-x2, 10 minutes a command: run `baseline tput` in one call and `scale` in another):
#
#   source scripts/lab/device_env.sh && bash scripts/lab/transformer_perf.sh "$OUT" baseline tput
#   source scripts/lab/device_env.sh && bash scripts/lab/transformer_perf.sh "$OUT" scale
#
# Every run is 128 sentences of 64 source and 64 target tokens per GPU per step (model.batch_size=8192
# tokens, the synthetic lengths of conf/model/transformer.yaml), fp16 autocast, synthetic tokens.
#   baseline  scripts/lab/transformer_baseline.py: nn.Transformer, fp32 weights, default Adam (1 GPU)
#   tput      mode=throughput on 1 GPU: plain amp; + fp16 weights with fp32 master copies and the
#             embedding rounded to 33,712 rows; + torch.compile of forward and loss
#   scale     the fastest settings on 1 and 2 GPUs, with DDP's 25 MB buckets and with one bucket
# Outputs: OUT/baseline.json, OUT/<stage>.md (benchmark_gpu.py's tables), OUT/<stage>.jsonl, and a
# last line per run with its ratio to the baseline.
set -uo pipefail
out=$(realpath "${1:?usage: transformer_perf.sh OUT_DIR STAGE...}"); shift
mkdir -p "$out"
batch="model.batch_size=8192"
fast="$batch,master_weights=true,model.vocab_multiple=8"
bench() { python3 scripts/lab/benchmark_gpu.py --models transformer --precisions amp \
  --set warmup_steps=20 throughput_steps=40 throughput_repeats=5 --timeout 420 "$@"; }
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} > "$out/machine.txt" 2>&1
for stage in "$@"; do
  echo "== $(date -u +%H:%M:%S) $stage"
  case $stage in
    baseline) python3 scripts/lab/transformer_baseline.py --warmup 20 --steps 40 --repeats 5 > "$out/baseline.json" ;;
    tput) bench --gpus 1 --variants "$batch" "$fast" "$fast,model.compile=true" \
            --root "$out/runs-tput" --out "$out/tput.md" 2> "$out/tput.log" ;;
    scale) bench --gpus 1 2 --variants "$fast,model.compile=true" "$fast,model.compile=true,ddp_bucket_mb=1000" \
             --root "$out/runs-scale" --out "$out/scale.md" 2> "$out/scale.log" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
base = json.loads((out / "baseline.json").read_text())["tokens_per_s"] if (out / "baseline.json").is_file() else None
if base:
    print(f"baseline nn.Transformer: {base:,.0f} tokens/s")
for path in sorted(out.glob("*.jsonl")):
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if "median" not in r:
            print(f"{path.stem} gpus={r['gpus']} [{r['variant']}] failed: {r.get('error')}")
            continue
        ratio = f", {r['median'] / base:.3f}x the baseline" if base and r["gpus"] == 1 else ""
        print(f"{path.stem} gpus={r['gpus']} [{r['variant']}]: {r['median']:,.0f} tokens/s{ratio}")
PY
