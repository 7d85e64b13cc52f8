#!/usr/bin/env bash
# The GPU measurements of docs/benchmarks/, in stages, on a machine of the device tool:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_perf.sh "$OUT" obs ncf-tput ncf-calib gnmt-tput
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_perf.sh "$OUT" ncf-ttt gnmt-ttt
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_perf.sh "$OUT" gnmt-ddp     # on nvidia-h200-x2
#
# Every stage writes under a work folder that is packed into OUT/results.tgz after each stage, so
# a stage cut off by a time limit still leaves the earlier ones. Generated datasets stay out of
# the archive. Stages:
#   obs        scripts/lab/gpu_observability.sh: telemetry, energy, system.json on 1 and 2 GPUs
#   ncf-tput   NCF throughput at ml-20m's size and batch 2^20, per precision
#   ncf-calib  NCF on the generated ml-20m-size data, target out of reach: the HR@10 curve per seed
#   gnmt-tput  GNMT throughput at source and target length 30, per batch and precision, 1 and 2 GPUs
#   gnmt-ddp   where the 2-GPU GNMT step loses time: scripts/lab/ddp_overhead.py on every GPU at batch
#              2048, both ranks' profiler traces (OUT/traces.tgz), then 1 and 2 GPUs at batch 4096
#   ncf-ttt    NCF time to train on the generated ml-20m-size data, 1 and 2 GPUs, several seeds
#   gnmt-ttt   GNMT time to train on the embedded data, 1 and 2 GPUs, 5 seeds each (a sweep)
# Options through the environment: NCF_TARGET and NCF_SEEDS (ncf-ttt; default seeds "1 2 3"),
# NCF_DROPOUT (ncf-ttt), CALIB_EPOCHS (ncf-calib, default 20).
set -uo pipefail
out=$(realpath "${1:?usage: h200_perf.sh OUT_DIR STAGE...}"); shift
work=/tmp/h200_perf; data=/tmp/h200_data
mkdir -p "$work" "$data" "$out"
ngpu=$(python3 -c "import torch; print(torch.cuda.device_count())")
pack() { tar czf "$out/results.tgz" -C "$work" . ; }
stamp() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$work/stages.log"; }
train() { python3 -m harness.train progress=false data_root="$data" "$@"; }
ml20m_gen() {  # the generated ml-20m-size data, written and preprocessed (cached) once
  # a file, not standard input: the generator's worker processes re-import the main script
  cat > "$work/ml20m_gen.py" <<'PY'
import sys
from harness import registry
from harness.config import compose
from reference_models.ncf import data
cfg = compose(["model=ncf", "dataset=ml20m_generated", f"data_root={sys.argv[1]}"])
print(data.describe(data.load(registry.get("ncf").prepare(cfg))))
PY
  PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} python3 "$work/ml20m_gen.py" "$data"
}
{
  nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,power.limit --format=csv
  nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  nproc; free -g | head -2
} > "$work/machine.txt" 2>&1

for stage in "$@"; do
  stamp "$stage"
  case $stage in
    obs)
      # the dataset generation runs beside it: it needs the CPUs, the observability runs hardly do
      (time ml20m_gen > "$work/ml20m_gen.log" 2>&1; touch "$work/ml20m.done") &
      bash scripts/lab/gpu_observability.sh "$work/obs" > "$work/obs.log" 2>&1 ;;
    ncf-tput)
      python3 scripts/lab/benchmark_gpu.py --models ncf --precisions amp bf16 --gpus 1 \
        --variants model.batch_size=1048576 model.batch_size=1048576,master_weights=true \
        --set warmup_steps=10 throughput_steps=40 --root "$work/ncf-tput" --out "$work/ncf-tput.md" --timeout 120 \
        2> "$work/ncf-tput.log"
      python3 scripts/lab/benchmark_gpu.py --models ncf --precisions tf32 --gpus 1 --variants model.batch_size=1048576 \
        --set warmup_steps=10 throughput_steps=40 --root "$work/ncf-tput-tf32" --out "$work/ncf-tput-tf32.md" \
        --timeout 120 2> "$work/ncf-tput-tf32.log" ;;
    ncf-calib)
      for _ in $(seq 300); do [ -e "$work/ml20m.done" ] && break; sleep 1; done
      [ -e "$work/ml20m.done" ] || ml20m_gen > "$work/ml20m_gen.log" 2>&1
      # two settings side by side, one per GPU: MLPerf GPU NCF's dropout 0.5 and none
      for g in 0 1; do
        [ "$g" -lt "$ngpu" ] || continue
        drop=$([ "$g" = 0 ] && echo 0.0 || echo 0.5)
        CUDA_VISIBLE_DEVICES=$g timeout 240 python3 -m harness.train progress=false data_root="$data" model=ncf \
          dataset=ml20m_generated precision=amp master_weights=true seed=$((g + 1)) model.target=1.0 \
          max_epochs=${CALIB_EPOCHS:-20} model.dropout=$drop output_root="$work/ncf-calib" \
          > "$work/ncf-calib-$g.log" 2>&1 &
      done
      wait ;;
    gnmt-tput)
      python3 scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 \
        --variants model.batch_size=512 model.batch_size=512,master_weights=true \
        model.batch_size=1024,master_weights=true,model.compile_attention=true \
        --set warmup_steps=10 throughput_steps=30 --root "$work/gnmt-tput" --out "$work/gnmt-tput.md" --timeout 150 \
        2> "$work/gnmt-tput.log"; pack
      python3 scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 2 \
        --variants model.batch_size=1024,master_weights=true \
        --set warmup_steps=10 throughput_steps=30 --root "$work/gnmt-tput2" --out "$work/gnmt-tput2.md" --timeout 150 \
        2> "$work/gnmt-tput2.log" ;;
    gnmt-ddp)
      fast="model=gnmt dataset=wmt16 precision=amp master_weights=true model.compile_attention=true"
      timeout 240 torchrun --standalone --nproc_per_node="$ngpu" scripts/lab/ddp_overhead.py $fast model.batch_size=2048 \
        --repeats 4 --out "$work/ddp-b2048.json" > "$work/ddp-b2048.log" 2>&1; pack
      # the traces go into an archive of their own: a large one must not take the results with it
      timeout 90 torchrun --standalone --nproc_per_node="$ngpu" scripts/lab/profile_step.py $fast model.batch_size=2048 \
        --warmup 10 --steps 5 --trace-dir /tmp/h200_traces > "$work/profile-b2048.log" 2>&1
      tar czf "$out/traces.tgz" -C /tmp/h200_traces .; pack
      python3 scripts/lab/benchmark_gpu.py --models gnmt --precisions amp --gpus 1 2 \
        --variants model.batch_size=4096,master_weights=true,model.compile_attention=true \
        --set warmup_steps=10 throughput_steps=20 --root "$work/gnmt-b4096" --out "$work/gnmt-b4096.md" \
        --timeout 150 2> "$work/gnmt-b4096.log" ;;
    ncf-ttt)
      [ -e "$work/ml20m.done" ] || { ml20m_gen > "$work/ml20m_gen.log" 2>&1; touch "$work/ml20m.done"; }
      for s in ${NCF_SEEDS:-1 2 3}; do
        train model=ncf dataset=ml20m_generated precision=amp master_weights=true seed=$s \
          ${NCF_TARGET:+model.target=$NCF_TARGET} ${NCF_DROPOUT:+model.dropout=$NCF_DROPOUT} output_root="$work/ncf-ttt-1gpu" > "$work/ncf-ttt-1gpu-$s.log" 2>&1
      done
      if [ "$ngpu" -ge 2 ]; then
        for s in ${NCF_SEEDS:-1 2 3}; do
          train model=ncf dataset=ml20m_generated precision=amp master_weights=true seed=$s gpus=2 \
            model.batch_size=524288 ${NCF_TARGET:+model.target=$NCF_TARGET} ${NCF_DROPOUT:+model.dropout=$NCF_DROPOUT} output_root="$work/ncf-ttt-2gpu" \
            > "$work/ncf-ttt-2gpu-$s.log" 2>&1
        done
      fi
      python3 -m harness.report "$work"/ncf-ttt-*gpu/runs --md "$work/ncf-ttt-report.md" > /dev/null 2>&1 ;;
    gnmt-ttt)
      g=$([ "$ngpu" -ge 2 ] && echo 1,2 || echo 1)
      python3 -m harness.sweep model=gnmt runs=5 gpus=$g progress=false data_root="$data" \
        output_root="$work/gnmt-ttt" > "$work/gnmt-ttt.log" 2>&1 ;;
    *) echo "unknown stage $stage" | tee -a "$work/stages.log" ;;
  esac
  pack
done
stamp done
pack
# what the call's output shows: the tables, and each NCF calibration run's HR@10 curve
cat "$work"/*.md 2>/dev/null
python3 - "$work" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("ncf-*/runs/*/result.json")):
    r = json.loads(path.read_text())
    curve = " ".join(f"{e['quality']:.4f}@{e['train_seconds']:.1f}s" for e in r["epochs"] if e.get("quality") is not None)
    print(f"{path.parent.parent.parent.name} seed {r['seed']} {r['status']} ttt {r.get('time_to_train_s')} "
          f"overhead {r.get('overhead_fraction')}: {curve}")
PY
