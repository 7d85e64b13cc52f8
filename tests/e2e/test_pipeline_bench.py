"""scripts/tools/pipeline_bench.py on the CPU at tiny shapes: the loader alone, training on the files and
the same steps on held batches, with the bottleneck named, for ResNet's JPEGs and NCF's ratings; and on
ResNet's GPU decode path with a share decoded by the workers (model.cpu_decode_share), which reports the
decode thread's stages and exits on its own as soon as its figures are out."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from reference_models.resnet.generate import ImageSpec, write
from tests.helpers import REPO, child_env

pytestmark = pytest.mark.e2e

BENCH = REPO / "scripts" / "tools" / "pipeline_bench.py"
TINY_RESNET = ["device=cpu", "model.layers=[1,1,1,1]", "model.width=8", "model.image_size=32", "model.resize_size=36",
               "model.batch_size=4", "model.workers=1"]


@pytest.mark.parametrize("decode", ["cpu"])  # decode=cuda needs a GPU: the same script on the device
def test_the_bench_sets_jpegs_beside_held_batches_and_appends_its_row(tmp_path, decode):
    folder = write(ImageSpec(classes=2, train_per_class=12, val_per_class=1), tmp_path / "d", workers=1)
    out = subprocess.run([sys.executable, str(BENCH), "model=resnet", "dataset=imagenet", f"dataset.path={folder}",
                          *TINY_RESNET, f"model.decode={decode}", "--warmup", "1", "--steps", "5", "--skip", "1",
                          "--json", "pipe.jsonl", "--table", "pipe.md"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "pipe.jsonl").read_text())
    assert all(result[k] > 0 for k in ("loader", "real", "synthetic"))
    assert result["real_over_synthetic"] == pytest.approx(result["real"] / result["synthetic"])
    assert result["epoch_start_s"]["real"] >= 0 and result["verdict"] and result["decode"] == decode
    header, _, row = (tmp_path / "pipe.md").read_text().splitlines()
    assert header.startswith("| model | settings |") and row.startswith("| model=resnet | `dataset=imagenet ")
    assert f"**{result['real_over_synthetic']:.3f}**" in row and result["verdict"] in row


def test_the_bench_measures_a_model_that_reads_ratings_not_images(tmp_path):
    """NCF's generated ratings at its debug preset: the same three rates in samples/s, no decode thread;
    missing its target (10x the held-batch rate, out of reach), it profiles real steps: the table, and the
    timeline of each thread and stream that chrome://tracing and Perfetto open."""
    out = subprocess.run([sys.executable, str(BENCH), "model=ncf", "+debug=ncf", "device=cpu",
                          f"data_root={tmp_path / 'data'}", "--warmup", "1", "--steps", "2", "--skip", "1",
                          "--target", "10", "--profile", "2", "--profile-out", "prof.txt"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["model"] == "ncf" and result["unit"] == "samples"
    assert all(result[k] > 0 for k in ("loader", "real", "synthetic")) and result["decode_thread"] is None
    assert "real / synthetic = " in out.stdout
    assert (tmp_path / "prof.txt").read_text().startswith("2 real steps, by GPU time:")
    events = json.loads((tmp_path / "prof.trace.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "X" and e.get("dur", 0) > 0 for e in events)


# the bench with the GPU decode path's backend swapped for PIL, which a CPU runs
_PIL_BENCH = """import runpy, sys
from reference_models.vision import backend
backend.resolve = lambda choice, device, probe=None: "cpu" if choice == "cpu" else "pil"
sys.argv[0] = sys.argv[1]; del sys.argv[1]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_the_pipeline_bench_measures_the_gpu_path_with_a_share_decoded_by_the_workers(tmp_path):
    """pipeline_h200.sh's resnet:shareX stage at tiny shapes: model.cpu_decode_share through the bench's
    loader, real and synthetic windows, and the decode thread's figures."""
    folder = write(ImageSpec(classes=2, train_per_class=12, val_per_class=1), tmp_path / "d", workers=1)
    env = child_env()
    proc = subprocess.Popen([sys.executable, "-c", _PIL_BENCH, str(BENCH),
                          "model=resnet", "dataset=imagenet", f"dataset.path={folder}", "dataset.generator=null",
                          *TINY_RESNET, "model.decode=nvimgcodec",
                          "model.cpu_decode_share=0.5", "--label", "resnet share 0.5", "--warmup", "1", "--steps",
                          "3", "--skip", "1", "--json", "pipe.jsonl"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
    assert proc.stdout is not None
    lines, printed = [], None
    with proc.stdout:
        for line in proc.stdout:  # the figures' JSON line, then the process must end on its own, promptly
            lines.append(line)
            if line.startswith('{"script"'):
                printed = time.perf_counter()
    rc = proc.wait(timeout=600)
    assert rc == 0 and printed is not None, "".join(lines[-20:])
    assert time.perf_counter() - printed < 10, "the process printed its figures, then took long to exit"
    result = json.loads((tmp_path / "pipe.jsonl").read_text().splitlines()[-1])
    assert result["decode"] == "pil" and "model.cpu_decode_share=0.5" in result["overrides"]
    assert all(result[k] > 0 for k in ("loader", "real", "synthetic", "workers_alone"))
    assert result["decode_thread"]["batches"] > 0 and result["decode_thread"]["prepare_s"] > 0
    # the decode thread's host time by stage (pipeline_h200.sh prints them for the H200's rows)
    stages = result["decode_stages_ms"]
    assert {"allocate", "decode", "crop_resize", "copies"} <= set(stages) and all(v >= 0 for v in stages.values())
    assert sum(stages.values()) <= result["decode_thread"]["prepare_s"] / result["decode_thread"]["batches"] * 1e3 + 1
    assert result["teardown_s"] >= 0 and any(line.startswith("  its host time by stage") for line in lines)


@pytest.mark.parametrize("given, said", [
    (["dataset=ml20m", "dataset.path=missing"], "no ratings.csv in missing"),
    (["+debug=ncf", "precision=amp"], "precision=amp needs a CUDA device"),
])
def test_a_dataset_or_option_it_cannot_use_is_one_line_and_exit_1(tmp_path, given, said):
    # a device call's row reads the log's last line: a traceback's put the file and line of the raise there
    out = subprocess.run([sys.executable, str(BENCH), "model=ncf", "device=cpu", *given],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=child_env())
    assert out.returncode == 1 and out.stderr.startswith("pipeline_bench.py: ") and said in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
