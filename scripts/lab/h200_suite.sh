#!/usr/bin/env bash
# The GPU benchmark suite (python -m harness.bench) on the device tool's nvidia-h200-x2, in stages that
# each fit one call (10 minutes a command), with the plain PyTorch baselines it is compared with:
#
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_suite.sh "$OUT" one     # call 1
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_suite.sh "$OUT" two     # call 2
#   source scripts/lab/device_env.sh && bash scripts/lab/h200_suite.sh "$OUT" three   # call 3
#
# Stages (the default matrix is 8 models x tf32, amp x 1, 2 GPUs = 32 cells):
#   one    the 16 one-GPU cells, two at a time (one per GPU), then the baselines on GPU 0:
#          scripts/lab/plain_bert.py (plain PyTorch BERT-large, seq 512, batch 32, fp16, MLM over all
#          tokens) beside the harness's bert_large at the same workload, and scripts/lab/plain_loop.py
#          (the model's own modules in a bare loop) for bert_large, txl_large and tacotron2 at amp
#   two    the two-GPU cells of bert_base, bert_large, txl_base, txl_large
#   three  the two-GPU cells of tacotron2, waveglow, gnmt, ncf
#   compile (optional, if device time is left) the amp one-GPU cells of bert_base, bert_large,
#          txl_base and tacotron2 again with model.compile=true, in a folder of their own
# Each stage writes under /tmp/suite (kept while the machine stays warm) and returns
# OUT/suite_<stage>.tgz (the run folders, bench.jsonl, the tables) and OUT/results_<stage>.md. Back
# here, one table over all stages:
#   mkdir -p suite && for t in suite_*.tgz; do tar xzf "$t" -C suite; done
#   python -m harness.bench --tables-only --out suite/bench
set -uo pipefail
out=$(realpath "${1:?usage: h200_suite.sh OUT_DIR STAGE...}"); shift
work=/tmp/suite; mkdir -p "$work" "$out"
bench() { python3 -m harness.bench --out "$work/bench" --resume --timeout 240 "$@"; }
pack() { tar czf "$out/suite_$1.tgz" -C "$work" . && cp "${2:-$work/bench/results.md}" "$out/results_$1.md"; }
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$work/machine.txt" 2>&1
for stage in "$@"; do
  echo "== $(date -u +%H:%M:%S) $stage" | tee -a "$work/stages.log"
  case $stage in
    one)
      bench --gpus 1 --jobs 2 --budget-min 6 2>&1 | tee "$work/one.log"
      pack "$stage"  # the matrix comes back even if the baselines run out of time
      export CUDA_VISIBLE_DEVICES=0
      python3 scripts/lab/plain_bert.py --warmup 10 --steps 20 --repeats 3 | tee -a "$work/baselines.jsonl"
      python3 -m harness.bench --out "$work/baseline_bert" --models bert_large:pretrain512 --precisions amp --gpus 1 \
        --set model.max_predictions=512 model.batch_size=32 --timeout 240 2>&1 | tee "$work/baseline_bert.log"
      for m in bert_large txl_large tacotron2; do
        steps=20; [ "$m" = tacotron2 ] && steps=6
        python3 scripts/lab/plain_loop.py "model=$m" precision=amp --warmup 5 --steps "$steps" --repeats 3 \
          | tee -a "$work/baselines.jsonl"
      done
      unset CUDA_VISIBLE_DEVICES ;;
    two) bench --gpus 2 --budget-min 8.5 --models bert_base bert_large txl_base txl_large 2>&1 | tee "$work/two.log" ;;
    three) bench --gpus 2 --budget-min 8.5 --models tacotron2 waveglow gnmt ncf 2>&1 | tee "$work/three.log" ;;
    compile)
      python3 -m harness.bench --out "$work/compiled" --resume --timeout 300 --budget-min 8.5 --gpus 1 --jobs 2 \
        --precisions amp --models bert_base bert_large txl_base tacotron2 --set model.compile=true \
        2>&1 | tee "$work/compile.log"
      pack "$stage" "$work/compiled/results.md"
      continue ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
  pack "$stage"
done
