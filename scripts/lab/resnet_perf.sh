#!/usr/bin/env bash
# ResNet-50's GPU measurements (issue 15's Performance section), in stages, on a machine of the device
# tool with 2 H200s (nvidia-h200-x2; the 1-GPU stages use GPU 0 and CPU cores 0-15, as on a 1-GPU machine):
#
#   source scripts/lab/device_env.sh && bash scripts/lab/resnet_perf.sh "$OUT" tput        # ~6 min
#   source scripts/lab/device_env.sh && bash scripts/lab/resnet_perf.sh "$OUT" data ddp    # ~7 min
#
# Stages (each packs OUT/results.tgz when it ends, so a stage cut off by a time limit keeps the others):
#   tput  the plain torchvision baseline (scripts/lab/resnet_baseline.py: batch 256, amp, channels_last)
#         beside mode=throughput of the real-scale preset at batch 256, amp: as configured, then
#         channels_last, then channels_last + torch.compile, then + CUDA graphs (compile mode
#         reduce-overhead); goal >= 7,300 images/s
#   ddp   channels_last + compile on 2 GPUs at 256 per GPU; goal >= 1.95x tput's 1-GPU row of the same
#         variant (the last but one)
#   data  writes 10,000 training JPEGs of 500x375 (20 classes; reference_models/resnet/generate.py on
#         cores 16-31), then scripts/lab/resnet_pipeline.py on cores 0-15 with 15 DataLoader workers:
#         loader alone, training on the JPEGs and on a held batch, for decode=cpu (PIL in the workers)
#         and decode=cuda (nvJPEG); goal real within 15% of synthetic, else the bottleneck named
set -uo pipefail
out=$(realpath "${1:?usage: resnet_perf.sh OUT_DIR STAGE...}"); shift
work=/tmp/resnet_perf; data=/tmp/resnet_data
mkdir -p "$work" "$data" "$out"
pack() { tar czf "$out/results.tgz" -C "$work" --exclude='*.pt' . ; }
stamp() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$work/stages.log"; }
fast="model.batch_size=256,model.channels_last=true,model.compile=true"
common=(--models resnet --precisions amp --set warmup_steps=30 throughput_steps=50 throughput_repeats=3 --timeout 240)
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv
  python3 -c "import torch, torchvision, PIL; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'PIL', PIL.__version__, 'cudnn', torch.backends.cudnn.version())"
  nproc; free -g | head -2
} > "$work/machine.txt" 2>&1
cat "$work/machine.txt"

for stage in "$@"; do
  stamp "$stage"
  case $stage in
    tput)
      CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 timeout 120 python3 scripts/lab/resnet_baseline.py --batch 256 \
        --precision amp --warmup 30 --steps 50 --repeats 3 --json "$work/baseline.json" > "$work/baseline.log" 2>&1
      CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 python3 scripts/lab/benchmark_gpu.py "${common[@]}" --gpus 1 \
        --variants model.batch_size=256 model.batch_size=256,model.channels_last=true "$fast" \
        "$fast,model.compile_mode=reduce-overhead" \
        --root "$work/tput" --out "$work/tput.md" 2> "$work/tput.log" ;;
    ddp)
      python3 scripts/lab/benchmark_gpu.py "${common[@]}" --gpus 2 --variants "$fast" \
        --root "$work/ddp" --out "$work/ddp.md" 2> "$work/ddp.log" ;;
    data)
      [ -e "$data/inet500/GENERATED.json" ] || taskset -c 16-31 python3 -m reference_models.resnet.generate \
        "$data/inet500" --classes 20 --width 500 --height 375 --size-jitter 0 --train-per-class 500 \
        --val-per-class 5 --workers 16 > "$work/generate.log" 2>&1
      du -sh "$data/inet500" >> "$work/generate.log"
      for decode in cpu cuda; do
        CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 timeout 240 python3 scripts/lab/resnet_pipeline.py model=resnet \
          dataset=imagenet dataset.path="$data/inet500" model.num_classes=1000 precision=amp \
          model.channels_last=true model.compile=true model.batch_size=256 model.workers=15 model.decode=$decode \
          --warmup 30 --steps 120 --json "$work/pipeline-$decode.json" > "$work/pipeline-$decode.log" 2>&1
      done ;;
    *) echo "unknown stage $stage" | tee -a "$work/stages.log" ;;
  esac
  pack
done
stamp done
pack
# what the call's output shows
tail -n 2 "$work"/baseline.log 2>/dev/null
cat "$work"/*.md 2>/dev/null
for f in "$work"/pipeline-*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 5 "$f"; }; done
