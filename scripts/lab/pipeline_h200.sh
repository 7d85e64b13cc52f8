#!/usr/bin/env bash
# Every model with a real data path, its input pipeline against its training step, side by side on
# one H200 (the device tool's nvidia-h200: 16 cores), in one call; the issue-25 table:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/pipeline_h200.sh "$OUT" decoders resnet detection text
#
# Stages, run in the order given (each appends to OUT/pipeline.md and OUT/pipeline.jsonl; logs go to
# OUT/logs.tgz at the end); one measurement alone by its name: resnet:cpu, resnet:nvimgcodec,
# resnet:nvimgcodec1 ... resnet:nvimgcodec8, resnet:share0.2 (any share 0.x), resnet:auto, ssd:cpu,
# ssd:cpu4 ... ssd:cpu15 (N workers), ssd:nvimgcodec, maskrcnn:cpu, maskrcnn:nvimgcodec, maskrcnn:cpu:ungrouped,
# maskrcnn:nvimgcodec:ungrouped, maskrcnn:canvas (nvimgcodec, grouped, each batch padded to a fixed canvas: model.fixed_canvas=true), maskrcnn:frozen (nvimgcodec, grouped, model.frozen_body=true), gnmt, transformer, ncf:
#   decoders   scripts/tools/pipeline_decoders.py on the ImageNet-size JPEGs: each GPU decode backend alone,
#              beside a ResNet-50 step, and its pictures against PIL's (OUT/decoders.json)
#   resnet     ResNet-50 on generated 500x375 JPEGs (10,000), batch 256, amp, channels_last, compile:
#              decode=cpu (15 workers) and decode=nvimgcodec (12 workers); target 0.95
#   resnet:nvimgcodecN  decode=nvimgcodec with model.decode_threads=N (resnet:nvimgcodec: the model's
#              default, 1); resnet:threads runs N = 1, 2 and 3 side by side. RESNET_COMPILE_MODE
#              (e.g. reduce-overhead: CUDA graphs, little host time in the training thread) sets
#              model.compile_mode for every resnet stage and names it in the label
#   resnet:shareX  decode=nvimgcodec with model.cpu_decode_share=X (e.g. resnet:share0.2): the workers
#              decode the last round(256 X) images of each batch with PIL, the GPU the rest; resnet:share
#              runs the default (share 0: resnet:nvimgcodec), 0.2 and 0.3 side by side
#   resnet:auto  the same with decode=auto (what the build-time probe picks, and its figure);
#   auto       only the build with decode=auto: what the probe measured and chose (its log line)
#   detection  SSD300 (batch 128, amp, channels_last) and Mask R-CNN (batch 8, amp, channels_last) on
#              generated COCO-size images (3,000; 480-640 a side, 3-8 objects), decode=cpu and nvimgcodec;
#              target 0.9. Mask R-CNN's batches are grouped by aspect ratio (model.aspect_grouping, its
#              default, as the MLPerf reference batches them: after the resize and the padding a
#              landscape batch is 800 high and up to 1088 wide, a portrait one the other way round);
#              maskrcnn:*:ungrouped measures mixed batches (model.aspect_grouping=false: a mixed batch
#              pads to a square canvas of up to 1088x1088)
#   maskrcnn:grouping  maskrcnn:cpu:ungrouped then maskrcnn:cpu, side by side (the issue's comparison)
#   ssd:workers  ssd:cpu15, ssd:cpu12 and ssd:cpu10 side by side: the CPU path's workers share the 16 cores
#              with the pin thread and the training thread (an 8% data wait at 15)
#   resnet:prealloc  decode=nvimgcodec with model.decode_preallocate=true (the hardware decoder's buffers
#              sized once for the batch, as DALI sizes them); resnet:compare runs resnet:nvimgcodec then it
#   ssd:compare  ssd:cpu15, ssd:cpu8 and ssd:cpu6: fewer workers leave cores to the pin and decode threads
#              and to the training process (issue 35)
# A check on a CPU at tiny sizes (so a device call cannot fail for a typo): DEVICE=cpu PRECISION=fp32
# RESNET_COMPILE=false RESNET_BATCH=4 SSD_BATCH=4 and RESNET_EXTRA / SSD_EXTRA (a small model's overrides);
# the nvimgcodec rows then fail with their one line (no CUDA), every other row runs.
#   transformer:auto  the Transformer row with PyTorch's own attention choice (cuDNN's on Hopper) and batches
#              padded to their longest sentence: the path before model.attention and model.pad_multiple
#   transformer:padN  the Transformer row with each side padded to a multiple of N tokens (model.pad_multiple)
#   transformer:workers  the Transformer row with its batches padded by 2 DataLoader workers and pinned by the
#              pin thread (model.collate_workers=2: the path before padding in the training thread)
#   transformer:compile  the Transformer row with torch.compile in mode=train too (model.compile=true)
#   gnmt:paths  the GNMT row as it trains (mode=train: fp32 weights, eager attention; the fast path's fp16
#              weights and compiled attention scores are mode=throughput's), then with fp16 weights
#              (gnmt:fp16-weights), with the scores compiled (gnmt:compiled-attention) and with both
#              (gnmt:both), side by side: whether training on bucketed lengths gains what the fixed shapes did
#   maskrcnn:paths  the Mask R-CNN row as it trains (maskrcnn:nvimgcodec: the body eager, grouped, each batch padded
#              to its largest image, NHWC and the mask head on fixed ROI counts: training's fast path on CUDA), then
#              with the mask head eager (maskrcnn:eager-mask-head), in NCHW too (maskrcnn:nchw: training's default
#              before 2026-12-07), compiled (maskrcnn:compiled: torch.compile's default mode over the batches'
#              shapes) and with mode=throughput's fast path on fixed canvases (maskrcnn:canvas-graphs:
#              fixed_canvas, reduce-overhead), side by side: whether training on files can have what the
#              synthetic cell's fast path gained
#   maskrcnn:defaults  maskrcnn:nchw and maskrcnn:nvimgcodec alternated twice: training's old default beside its new
#   maskrcnn:bodies  maskrcnn:nvimgcodec (no backbone weights: every stage and batch norm trained) and maskrcnn:frozen
#              (model.frozen_body=true: the stem and conv2_x not trained and batch norm frozen, as the reference trains
#              from pretrained weights and as the synthetic cell of mode=throughput runs) alternated twice: the
#              reference's workload on files beside the row's
#   text       GNMT (batch 512, amp) and Transformer-big (8,192 tokens, amp) on their generated token files,
#              NCF (batch 2^20, amp, master weights) on a generated ml-20m-format ratings.csv; target 0.97
# Datasets are generated in the call (scripts/tools/pipeline_datasets.py, the models' generators), on
# every core, under /tmp/pipeline_data. Environment: STEPS and WARMUP (the windows; SSD_STEPS those of the
# SSD rows, input-bound on the CPU path, where fewer steps say as much; MASKRCNN_STEPS those of the Mask R-CNN
# rows, 2/5 of STEPS by default: its steps are the slowest, but a window of few mixed COCO batches spreads), LIMIT (seconds a
# measurement may take), DEADLINE (seconds into the call after which measurements are skipped, so the
# call ends with its files), PROFILE=N (profile N real steps of a measurement that misses its target),
# IMAGENET_IMAGES, COCO_IMAGES and NCF_USERS (the datasets' sizes; a larger dataset only has fewer epoch starts),
# WARM_PASS=1 (pipeline_bench.py --warm-pass: the real window's batch shapes met once before it is timed).
set -uo pipefail
out=$(realpath "${1:?usage: pipeline_h200.sh OUT_DIR STAGE...}"); shift
data=${PIPELINE_DATA:-/tmp/pipeline_data}; work=${PIPELINE_WORK:-/tmp/pipeline_work}
mkdir -p "$data" "$work" "$out"
inet=${IMAGENET_IMAGES:-10000}; coco=${COCO_IMAGES:-3000}; users=${NCF_USERS:-40000}
steps=${STEPS:-100}; ssd_steps=${SSD_STEPS:-$steps}; maskrcnn_steps=${MASKRCNN_STEPS:-$((steps * 2 / 5))}; warmup=${WARMUP:-25}; limit=${LIMIT:-200}; deadline=${DEADLINE:-100000}; t0=$SECONDS
stamp() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$work/stages.log"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv 2>&1
  python3 -c "import torch, torchvision, PIL; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'torchvision', torchvision.__version__, 'PIL', PIL.__version__, 'cudnn', torch.backends.cudnn.version())"
  python3 -c "from nvidia import nvimgcodec; print('nvimgcodec', nvimgcodec.__version__)" 2>&1 | tail -1
  nproc; free -g | head -2
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

bench() {  # label target steps overrides...
  local label=$1 target=$2 n=$3; shift 3
  local name; name=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
  local log="$work/$name.log"
  if [ $((SECONDS - t0)) -gt "$deadline" ]; then
    stamp "$label: skipped, past the call's deadline of ${deadline} s"; echo "| $label | not run: past the call's deadline |" >> "$out/pipeline.md"; return
  fi
  stamp "$label"
  timeout "$limit" python3 scripts/tools/pipeline_bench.py "$@" --label "$label" --target "$target" \
    --warmup "$warmup" --steps "$n" --json "$out/pipeline.jsonl" --table "$out/pipeline.md" \
    --profile "${PROFILE:-0}" --profile-out "$work/profile_$name.txt" ${WARM_PASS:+--warm-pass} > "$log" 2>&1
  local rc=$?
  tail -n 3 "$log"
  [ $rc -eq 0 ] || { echo "| $label | exit $rc: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-200) |" >> "$out/pipeline.md"; }
}
imagenet() { [ -e "$data/inet500/DONE" ] || { stamp "writing $inet ImageNet-size JPEGs"; python3 scripts/tools/pipeline_datasets.py imagenet "$data/inet500" --images "$inet" >> "$work/datasets.log" 2>&1; }; }
cocosize() { [ -e "$data/coco640/DONE" ] || { stamp "writing $coco COCO-size images"; python3 scripts/tools/pipeline_datasets.py coco "$data/coco640" --images "$coco" >> "$work/datasets.log" 2>&1; }; }
resnet="model=resnet dataset=imagenet dataset.path=$data/inet500 model.num_classes=1000 precision=${PRECISION:-amp} model.channels_last=true model.compile=${RESNET_COMPILE:-true} model.batch_size=${RESNET_BATCH:-256}${DEVICE:+ device=$DEVICE}${RESNET_EXTRA:+ $RESNET_EXTRA}"
rmode=${RESNET_COMPILE_MODE:+ $RESNET_COMPILE_MODE}  # in the labels
[ -n "${RESNET_COMPILE_MODE:-}" ] && resnet="$resnet model.compile_mode=$RESNET_COMPILE_MODE"
ssd="model=ssd dataset=ssd_coco2017 dataset.path=$data/coco640 precision=${PRECISION:-amp} model.channels_last=true model.batch_size=${SSD_BATCH:-128}${DEVICE:+ device=$DEVICE}${SSD_EXTRA:+ $SSD_EXTRA}"
gnmt="model=gnmt dataset=gnmt_embedded data_root=$data model.hidden_size=1024 model.batch_size=512 precision=amp"
maskrcnn="model=maskrcnn dataset=maskrcnn_coco2017 dataset.path=$data/coco640 precision=amp model.channels_last=true model.batch_size=8"

run() {  # one measurement by name
  case $1 in
    resnet:cpu) imagenet; bench "resnet cpu$rmode" 0.95 "$steps" $resnet model.workers=15 model.decode=cpu ;;
    resnet:nvimgcodec) imagenet; bench "resnet nvimgcodec$rmode" 0.95 "$steps" $resnet model.workers=12 model.decode=nvimgcodec ;;
    resnet:nvimgcodec[1-8]) imagenet; n=${1#resnet:nvimgcodec}
      bench "resnet nvimgcodec $n thread$([ "$n" = 1 ] || echo s)$rmode" 0.95 "$steps" $resnet model.workers=12 \
        model.decode=nvimgcodec model.decode_threads="$n" ;;
    resnet:share0.[0-9]*) imagenet; x=${1#resnet:share}
      bench "resnet nvimgcodec share $x$rmode" 0.95 "$steps" $resnet model.workers=12 \
        model.decode=nvimgcodec model.cpu_decode_share="$x" ;;
    resnet:prealloc) imagenet; bench "resnet nvimgcodec preallocated$rmode" 0.95 "$steps" $resnet model.workers=12 \
      model.decode=nvimgcodec model.decode_preallocate=true ;;
    resnet:auto) imagenet; bench "resnet auto$rmode" 0.95 "$steps" $resnet model.workers=15 model.decode=auto ;;
    auto) imagenet; bench "resnet decode=auto" 0.95 "$steps" $resnet model.workers=15 model.decode=auto --build-only ;;
    ssd:cpu) cocosize; bench "ssd cpu" 0.9 "$ssd_steps" $ssd model.workers=15 model.decode=cpu ;;
    ssd:cpu[0-9]*) cocosize; n=${1#ssd:cpu}
      bench "ssd cpu $n workers" 0.9 "$ssd_steps" $ssd model.workers="$n" model.decode=cpu ;;
    ssd:nvimgcodec) cocosize; bench "ssd nvimgcodec" 0.9 "$steps" $ssd model.workers=12 model.decode=nvimgcodec ;;
    maskrcnn:cpu) cocosize; bench "maskrcnn cpu grouped" 0.9 "$maskrcnn_steps" $maskrcnn model.workers=15 model.decode=cpu ;;
    maskrcnn:nvimgcodec) cocosize; bench "maskrcnn nvimgcodec grouped" 0.9 "$maskrcnn_steps" $maskrcnn model.workers=12 \
      model.decode=nvimgcodec ;;
    maskrcnn:canvas) cocosize; bench "maskrcnn nvimgcodec grouped canvas" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.fixed_canvas=true ;;
    maskrcnn:cpu:ungrouped) cocosize; bench "maskrcnn cpu ungrouped" 0.9 "$maskrcnn_steps" $maskrcnn model.workers=15 \
      model.decode=cpu model.aspect_grouping=false ;;
    maskrcnn:nvimgcodec:ungrouped) cocosize; bench "maskrcnn nvimgcodec ungrouped" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.aspect_grouping=false ;;
    maskrcnn:compiled) cocosize; bench "maskrcnn nvimgcodec grouped compiled" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.compile=true ;;
    maskrcnn:eager-mask-head) cocosize; bench "maskrcnn nvimgcodec grouped eager mask head" 0.9 "$maskrcnn_steps" \
      $maskrcnn model.workers=12 model.decode=nvimgcodec model.fixed_mask_rois=false ;;
    maskrcnn:nchw) cocosize; bench "maskrcnn nvimgcodec grouped NCHW eager mask head" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.channels_last=false model.fixed_mask_rois=false ;;
    maskrcnn:frozen) cocosize; bench "maskrcnn nvimgcodec grouped frozen body" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.frozen_body=true ;;
    maskrcnn:canvas-graphs) cocosize; bench "maskrcnn nvimgcodec canvas, fast path" 0.9 "$maskrcnn_steps" $maskrcnn \
      model.workers=12 model.decode=nvimgcodec model.fixed_canvas=true model.compile=true \
      model.compile_mode=reduce-overhead model.fixed_mask_rois=true ;;
    gnmt) bench "gnmt" 0.97 "$steps" $gnmt ;;
    gnmt:fp16-weights) bench "gnmt fp16 weights" 0.97 "$steps" $gnmt master_weights=true ;;
    gnmt:compiled-attention) bench "gnmt compiled attention" 0.97 "$steps" $gnmt model.compile_attention=true ;;
    gnmt:both) bench "gnmt fp16 weights, compiled attention" 0.97 "$steps" $gnmt master_weights=true \
      model.compile_attention=true ;;
    transformer) bench "transformer" 0.97 "$steps" model=transformer dataset=transformer_embedded data_root=$data \
      model.hidden_size=1024 model.num_layers=6 model.num_heads=16 model.filter_size=4096 model.batch_size=8192 precision=amp ;;
    transformer:auto) bench "transformer auto unpadded" 0.97 "$steps" model=transformer dataset=transformer_embedded \
      data_root=$data model.hidden_size=1024 model.num_layers=6 model.num_heads=16 model.filter_size=4096 \
      model.batch_size=8192 precision=amp model.attention=auto model.pad_multiple=1 ;;
    transformer:pad[0-9]*) n=${1#transformer:pad}; bench "transformer pad $n" 0.97 "$steps" model=transformer \
      dataset=transformer_embedded data_root=$data model.hidden_size=1024 model.num_layers=6 model.num_heads=16 \
      model.filter_size=4096 model.batch_size=8192 precision=amp model.pad_multiple="$n" ;;
    transformer:workers) bench "transformer workers" 0.97 "$steps" model=transformer dataset=transformer_embedded \
      data_root=$data model.hidden_size=1024 model.num_layers=6 model.num_heads=16 model.filter_size=4096 \
      model.batch_size=8192 precision=amp model.collate_workers=2 ;;
    transformer:compile) bench "transformer compile" 0.97 "$steps" model=transformer dataset=transformer_embedded \
      data_root=$data model.hidden_size=1024 model.num_layers=6 model.num_heads=16 model.filter_size=4096 \
      model.batch_size=8192 precision=amp model.compile=true ;;
    ncf) bench "ncf" 0.97 "$steps" model=ncf dataset=ml20m_generated dataset.path=$data/ncf dataset.generator.users=$users \
      precision=amp master_weights=true --skip 2 ;;
    decoders) imagenet; [ $((SECONDS - t0)) -gt "$deadline" ] && { stamp "decoders: skipped, past the deadline"; return; }; stamp decoders
      timeout 240 python3 scripts/tools/pipeline_decoders.py "$data/inet500/train" --files 768 --batch 256 \
        --json "$out/decoders.json" > "$work/decoders.log" 2>&1; tail -n 12 "$work/decoders.log" ;;
    *) echo "unknown stage $1" | tee -a "$work/stages.log" ;;
  esac
}
for stage in "$@"; do
  case $stage in
    resnet) run resnet:cpu; run resnet:nvimgcodec ;;
    resnet:threads) for n in 1 2 3; do run resnet:nvimgcodec$n; done ;;
    resnet:share) for x in nvimgcodec share0.2 share0.3; do run resnet:$x; done ;;
    detection) for m in ssd:cpu ssd:nvimgcodec maskrcnn:cpu maskrcnn:nvimgcodec; do run $m; done ;;
    maskrcnn:grouping) run maskrcnn:cpu:ungrouped; run maskrcnn:cpu ;;
    ssd:workers) for n in 15 12 10; do run ssd:cpu$n; done ;;
    resnet:compare) run resnet:nvimgcodec; run resnet:prealloc ;;
    ssd:compare) for n in 15 8 6; do run ssd:cpu$n; done ;;
    text) run gnmt; run transformer; run ncf ;;
    gnmt:paths) for m in gnmt gnmt:fp16-weights gnmt:compiled-attention gnmt:both; do run $m; done ;;
    maskrcnn:paths) for m in maskrcnn:nvimgcodec maskrcnn:eager-mask-head maskrcnn:nchw maskrcnn:compiled \
      maskrcnn:canvas-graphs; do run $m; done ;;
    maskrcnn:defaults) for m in maskrcnn:nchw maskrcnn:nvimgcodec maskrcnn:nchw maskrcnn:nvimgcodec; do run $m; done ;;
    maskrcnn:bodies) for m in maskrcnn:nvimgcodec maskrcnn:frozen maskrcnn:nvimgcodec maskrcnn:frozen; do run $m; done ;;
    *) run "$stage" ;;
  esac
done
stamp done
cp "$work"/datasets.log "$work"/stages.log "$out"/ 2>/dev/null
tar czf "$out/logs.tgz" -C "$work" --exclude='*.pt' . 2>/dev/null
cat "$out/pipeline.md" 2>/dev/null
