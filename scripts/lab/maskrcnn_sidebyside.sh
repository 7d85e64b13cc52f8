#!/usr/bin/env bash
# Mask R-CNN on one H200, the previous implementation (a copy of main's tree at .lab/base: torchvision's
# RPN and ROI heads, SGD without the fused kernel) beside this tree's (model.heads=batched, fused SGD),
# at the same workload: real-scale model, synthetic 800x1216 batches of 8 with 5 objects per image, amp,
# channels_last; 5 warm-up steps, then 3 windows of 8 steps each. At most 48 s in all (every step under
# `timeout`: 22 s for each tree, 4 s for the table; on 2026-12-01 this tree, given 18 s, was cut
# before its first window):
#
#   source scripts/lab/device_env.sh && bash scripts/lab/maskrcnn_sidebyside.sh "$OUT"
#   bash scripts/lab/maskrcnn_sidebyside.sh /tmp/sbs +debug=maskrcnn device=cpu precision=fp32 \
#       model.channels_last=false model.synthetic.height=128 model.synthetic.width=160 model.min_size=128 \
#       model.max_size=160 model.batch_size=2 warmup_steps=1 throughput_steps=3      # a dry run on a CPU
#
# Overrides after OUT_DIR go to both runs.
# Writes OUT/maskrcnn_sidebyside.json and .md (images/s per window, the median, new / old), and each
# run's console output and run folder (result.json, train.log) under OUT/old and OUT/new.
set -uo pipefail
out=$(realpath -m "${1:?usage: maskrcnn_sidebyside.sh OUT_DIR}")
mkdir -p "$out"
repo=$PWD
args=(model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp seed=1 progress=false telemetry=false
      tensorboard=false model.batch_size=8 model.channels_last=true warmup_steps=5 throughput_steps=8
      throughput_repeats=3 "${@:2}")
run() {  # name tree seconds: python -m imports from the working directory first, so each runs in its own tree
  local name=$1 tree=$2 limit=$3
  (cd "$tree" && PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" timeout "$limit" python3 -m harness.train "${args[@]}" \
      output_root="$out/$name" > "$out/$name.txt" 2>&1)
  echo "$name exit $?" >> "$out/status.txt"
}
: > "$out/status.txt"
if [[ -d .lab/base/harness ]]; then run old "$repo/.lab/base" 22; else echo "old missing: no .lab/base/harness" >> "$out/status.txt"; fi
run new "$repo" 22
timeout 4 python3 - "$out" "${*:2}" <<'PY'
import json, pathlib, statistics, sys

out, extra = pathlib.Path(sys.argv[1]), sys.argv[2]
rows = {}
for name in ("old", "new"):
    found = sorted((out / name).rglob("result.json"))
    r = json.loads(found[-1].read_text()) if found else {}
    windows = [e["throughput"] for e in r.get("epochs", []) if e.get("throughput")]
    rows[name] = {"status": r.get("status", "no result"), "windows_images_per_s": windows,
                  "median_images_per_s": statistics.median(windows) if windows else None,
                  "first_window_loss": (r.get("epochs") or [{}])[0].get("train_loss"),
                  "versions": r.get("versions"), "accelerator": r.get("accelerator")}
old, new = rows["old"]["median_images_per_s"], rows["new"]["median_images_per_s"]
summary = {"workload": "maskrcnn real scale, 800x1216, batch 8, 5 objects/image, amp, channels_last, "
                       "5 warm-up steps + 3 windows x 8 steps" + (f"; overrides: {extra}" if extra else ""), "old": rows["old"], "new": rows["new"],
           "new_over_old": new / old if old and new else None}
(out / "maskrcnn_sidebyside.json").write_text(json.dumps(summary, indent=1) + "\n")
fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
lines = ["| implementation | status | images/s per window | median | first window loss |", "|---|---|---|---|---|"]
for name, label in (("old", "previous (.lab/base: torchvision heads)"), ("new", "this tree (batched heads, fused SGD)")):
    r = rows[name]
    lines.append(f"| {label} | {r['status']} | {', '.join(fmt(w) for w in r['windows_images_per_s'])} | "
                 f"{fmt(r['median_images_per_s'])} | {fmt(r['first_window_loss']) if r['first_window_loss'] else '-'} |")
ratio = summary["new_over_old"]
lines.append("")
lines.append(f"new / old: {ratio:.2f}x" if ratio else "new / old: not measured (see status.txt and the .txt logs)")
(out / "maskrcnn_sidebyside.md").write_text(summary["workload"] + "\n\n" + "\n".join(lines) + "\n")
print((out / "maskrcnn_sidebyside.md").read_text())
PY
cat "$out/status.txt"
