#!/usr/bin/env bash
# The embedded GNMT preset's epochs to converge for the global batches of 1, 2, 4 and 8 ranks, seeds 1-5,
# all at once on one GPU (one process per run; the model is small enough for twenty to share it):
#
#   source scripts/lab/device_env.sh && bash scripts/lab/gnmt_calibration.sh "$OUT" [WORLDS] [SEEDS]
#
# A world of N ranks is stood in for by one process with N x 64 sentences per step: the preset's rate
# (x sqrt(global batch / 64)), warm-up (model.lr_warmup_samples) and decay (a fraction of the planned
# steps) depend on the global batch alone, so the optimisation is the one N ranks run; what differs is
# the order in which sentences meet in a batch and the dropout draws, as between two seeds. The real
# CPU runs (`gpus=N device=cpu`) are the check: docs/gnmt.md puts both side by side.
# OUT/calibration.tsv: world, seed, status, epochs to converge, BLEU per epoch.
set -uo pipefail
out=$(realpath "${1:?usage: gnmt_calibration.sh OUT_DIR [WORLDS] [SEEDS]}"); mkdir -p "$out"
worlds=${2:-1 2 4 8}
seeds=${3:-1 2 3 4 5}
export OMP_NUM_THREADS=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/machine.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__)" >> "$out/machine.txt"
common=(model=gnmt gpus=1 device=cuda precision=fp32 progress=false tensorboard=false telemetry=false
        data_root="$out/datasets")
# generate the corpus once before the runs start, so no run's time includes it
python3 -m harness.train "${common[@]}" seed=1 model.max_epochs=1 output_root="$out/warm" > "$out/warm.txt" 2>&1
for w in $worlds; do
  for s in $seeds; do
    python3 -m harness.train "${common[@]}" seed="$s" model.batch_size=$((64 * w)) \
      output_root="$out/w$w" > "$out/w$w-s$s.txt" 2>&1 &
  done
done
wait
python3 - "$out" > "$out/calibration.tsv" <<'PY'
import json, pathlib, sys
print("world\tseed\tstatus\tepochs_to_converge\tbleu_per_epoch")
for path in sorted(pathlib.Path(sys.argv[1]).glob("w[0-9]*/runs/*/result.json")):
    r = json.loads(path.read_text())
    world = r["global_batch_size"] // 64
    bleu = " ".join(f"{e['quality']:.4f}" for e in r.get("evals", []))
    print(f"{world}\t{r['seed']}\t{r['status']}\t{r.get('epochs_to_converge')}\t{bleu}")
PY
cat "$out/calibration.tsv"
rm -rf "$out/datasets"  # generated, not a result
