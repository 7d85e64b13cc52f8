#!/usr/bin/env bash
# Issue "Fast by default" on one H200 in one call: the GPU tests of the fast path, then harness.bench's
# cells with each model's fast path (the default) and the eager step side by side, then (STAGES) the
# embedded presets trained on the GPU at their new defaults. Every step under `timeout`; OUT gets
# gpu_tests.txt, bench_<group>/ (results.md, bench.jsonl, runs/) and their consoles.
#
#   source scripts/lab/device_env.sh && bash scripts/lab/fast_path_h200.sh "$OUT" tests speech txl
#
# Stages: gpu_tests (every test file with a test that needs CUDA: those that skip on a CPU, under
# pytest-timeout's per-test limit), tests, decode_tests (ResNet's GPU decode tests), speech (tacotron2, waveglow: tf32 and amp), txl (txl_base, txl_large: amp), bert
# (bert_large amp), gnmt (amp), resnet (amp), maskrcnn (amp), embedded (each time-to-train model's
# embedded preset trained once on the GPU, default precision and path; EMBEDDED names fewer, EMBEDDED_S
# limits each). WINDOW_S / WARMUP_S size the bench windows (default 1.5 / 2); TESTS_S limits gpu_tests.
set -uo pipefail
out=$(realpath -m "${1:?usage: fast_path_h200.sh OUT STAGE...}"); shift
mkdir -p "$out"
win=${WINDOW_S:-1.5}; warm=${WARMUP_S:-2}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> "$out/gpu.txt" 2>&1
bench() {  # bench GROUP TIMEOUT ARGS...
  local group=$1 limit=$2; shift 2
  timeout "$limit" python3 -m harness.bench --gpus 1 --window-s "$win" --warmup-s "$warm" --repeats 3 \
    --timeout 150 --paths fast eager --out "$out/bench_$group" "$@" > "$out/bench_$group.txt" 2>&1
  echo "== $group: exit $?"; tail -n 40 "$out/bench_$group/results.md" 2>/dev/null | head -n 30
}
for stage in "$@"; do
  case $stage in
    gpu_tests) mapfile -t files < <(grep -rl "cuda.is_available()" tests --include="test_*.py" | sort)
             timeout "${TESTS_S:-480}" python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" -o timeout=150 --tb=short \
               --durations=10 "${files[@]}" > "$out/gpu_tests.txt" 2>&1; echo "== gpu_tests: exit $?"
             grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed" "$out/gpu_tests.txt" | tail -n 25;;
    tests) timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/run/test_graph.py \
             tests/test_fastpath.py > "$out/gpu_tests.txt" 2>&1; echo "== tests: exit $?"; tail -n 5 "$out/gpu_tests.txt";;
    decode_tests) timeout 100 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/reference_models/resnet/test_decode.py \
             tests/reference_models/resnet/test_preallocate.py tests/reference_models/resnet/test_prefetch.py \
             > "$out/gpu_decode_tests.txt" 2>&1; echo "== decode_tests: exit $?"; tail -n 5 "$out/gpu_decode_tests.txt";;
    speech) bench speech 230 --models tacotron2 waveglow --precisions tf32 amp;;
    txl) bench txl 260 --models txl_base txl_large --precisions amp;;
    bert) bench bert 170 --models bert_large --precisions amp;;
    gnmt) bench gnmt 120 --models gnmt --precisions amp;;
    resnet) bench resnet 170 --models resnet --precisions amp;;
    maskrcnn) bench maskrcnn 150 --models maskrcnn --precisions amp;;
    embedded) for m in ${EMBEDDED:-ncf resnet gnmt transformer ssd maskrcnn}; do
                timeout "${EMBEDDED_S:-150}" python3 -m harness.train model=$m seed=1 progress=false output_root="$out/emb" \
                  > "$out/emb_$m.txt" 2>&1; echo "== embedded $m: exit $?"; grep -E "^(SUCCESS|ABORTED|FAILED)" "$out/emb_$m.txt"
              done;;
    *) echo "unknown stage $stage";;
  esac
done
