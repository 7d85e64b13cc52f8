"""SSD and Mask R-CNN end to end on CPU: every key their 0.7.0 rules require, mAP as a fraction (two parts
for Mask R-CNN), the checker's verdict, evaluation over two ranks equal to one rank's, two-rank runs, and
the real-scale models' throughput mode at tiny shapes (the plain torchvision baselines:
tests/e2e/test_plain_baselines.py).
(Convergence of the embedded defaults is measured, not tested: docs/ssd.md, docs/maskrcnn.md.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from omegaconf import OmegaConf

from harness import registry
from harness.config import compose
from harness.interface import RunContext
from tests.helpers import run_cli

pytestmark = pytest.mark.e2e

REQUIRED = {  # closed_ssd.yaml and closed_maskrcnn.yaml of ruleset 0.7.0
    "ssd": {"global_batch_size", "model_bn_span", "opt_learning_rate_warmup_factor", "opt_learning_rate_warmup_steps",
            "opt_weight_decay", "opt_base_learning_rate", "max_samples", "opt_learning_rate_decay_boundary_epochs"},
    "maskrcnn": {"global_batch_size", "opt_base_learning_rate", "opt_learning_rate_warmup_steps",
                 "opt_learning_rate_warmup_factor", "num_image_candidates", "opt_learning_rate_decay_factor",
                 "opt_learning_rate_decay_steps", "min_image_size", "max_image_size"},
}
QUIET = ["device=cpu", "progress=false", "tensorboard=false", "telemetry=false"]
# small evaluation batches, so that both ranks get some; every Mask R-CNN detection kept, so that a
# model trained for a few steps finds something and the equality means something
EVAL = {"ssd": ["model.eval_batch_size=2"], "maskrcnn": ["model.eval_batch_size=2", "model.box_score_threshold=0.0"]}


@pytest.mark.parametrize("name", ["ssd", "maskrcnn"])
def test_short_run_logs_every_required_key_and_fails_only_the_target(name, tmp_path):
    out = run_cli("harness.train", f"model={name}", f"+debug={name}", "seed=3", "output_root=out", *QUIET,
                  cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    records = [json.loads(line[9:]) for line in log.read_text().splitlines()]
    assert REQUIRED[name] <= {r["key"] for r in records}
    (quality,) = [r["value"] for r in records if r["key"] == "eval_accuracy"]
    if name == "maskrcnn":
        assert set(quality) == {"BBOX", "SEGM"} and all(0.0 <= v < 0.3 for v in quality.values())
    else:
        assert 0.0 <= quality < 0.23
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "aborted" and result["throughput_unit"] == "images/s"
    check = run_cli("harness.check", str(log))
    assert check.returncode == 1 and f"({name}, 0.7.0)" in check.stdout and "Failed checks for eval_accuracy" in check.stdout


def _evaluate(rank: int, world: int, name: str, init_file: str, state: str, data_root: str, out: str,
              extra: list[str]) -> None:
    if world > 1:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.set_num_threads(1)
    cfg = compose([f"model={name}", f"+debug={name}", f"data_root={data_root}", "seed=1", *EVAL[name], *extra])
    OmegaConf.resolve(cfg)
    bench = registry.get(name).build(RunContext(cfg=cfg, data_dir=Path(cfg.dataset.path),
                                                device=torch.device("cpu"), rank=rank, world_size=world, seed=1,
                                                shared_seed=2))
    bench.model.load_state_dict(torch.load(state))
    bench.model.eval()
    with torch.no_grad():
        quality = bench.evaluate(bench.model, 1)
    Path(f"{out}.{rank}").write_text(json.dumps(quality))
    if world > 1:
        dist.destroy_process_group()


@pytest.mark.parametrize("name,extra", [("ssd", []), ("maskrcnn", []), ("maskrcnn", ["model.aspect_grouping=true"])])
def test_evaluation_over_two_ranks_equals_one_ranks(name, extra, tmp_path):
    """A trained-for-a-few-steps model, so that it detects something: the same mAP from 1 and 2 ranks
    (Mask R-CNN's also with batches grouped by aspect ratio, in training and evaluation)."""
    cfg = compose([f"model={name}", f"+debug={name}", f"data_root={tmp_path}", "seed=1", *EVAL[name], *extra])
    OmegaConf.resolve(cfg)
    spec = registry.get(name)
    spec.task.prepare(cfg)
    torch.manual_seed(0)
    bench = spec.build(RunContext(cfg=cfg, data_dir=Path(cfg.dataset.path),
                                  device=torch.device("cpu"), rank=0, world_size=1, seed=1, shared_seed=2))
    for batch in list(bench.train_batches(1))[:3]:
        bench.optimizer.zero_grad()
        bench.loss(bench.model, batch)[0].total.backward()  # LossTerms: box and class, or the loss dict
        bench.optimizer.step()
    torch.save(bench.model.state_dict(), tmp_path / "w.pt")
    args = (name, str(tmp_path / "init"), str(tmp_path / "w.pt"), str(tmp_path), str(tmp_path / "q"), extra)
    _evaluate(0, 1, *args)
    one = json.loads((tmp_path / "q.0").read_text())
    mp.spawn(_evaluate, args=(2, *args), nprocs=2)
    two = [json.loads((tmp_path / f"q.{r}").read_text()) for r in range(2)]
    assert two[0] == two[1] == pytest.approx(one, abs=1e-9)
    values = one.values() if isinstance(one, dict) else [one]
    if name == "ssd":
        assert any(v > 0 for v in values)  # something was found, so the equality means something
    else:  # a few steps find nothing right yet, but many detections went through the gather and COCOeval
        bench.model.eval()
        with torch.no_grad():
            image, _ = bench.val[0]
            assert len(bench.model([image])[0]["boxes"]) > 10


def test_two_cpu_ranks_train_in_one_run_directory(tmp_path):
    out = run_cli("harness.train", "model=ssd", "+debug=ssd", "gpus=2", "seed=1", "output_root=out", *QUIET,
                  cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["world_size"] == 2 and data["global_batch_size"] == 16
    assert run_cli("harness.check", str(result.parent)).returncode == 1  # only the target, checked above


def test_two_cpu_ranks_train_mask_rcnn_on_aspect_grouped_batches(tmp_path):
    """Both ranks take every step of the grouped epoch (DDP would hang or fail on a rank with a step
    more), and the epoch is as long as the groups make it, its short last batches kept."""
    out = run_cli("harness.train", "model=maskrcnn", "+debug=maskrcnn", "gpus=2", "seed=2", "output_root=out",
                  "model.aspect_grouping=true", "model.batch_size=3", *QUIET, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["world_size"] == 2 and data["global_batch_size"] == 6 and data["status"] == "aborted"
    (annotations,) = (tmp_path / "out" / "datasets").rglob("instances_train2017.json")
    images = json.loads(annotations.read_text())["images"]
    portrait = sum(i["height"] >= i["width"] for i in images)
    assert 0 < portrait < len(images)  # both groups, so that the batches had something to sort
    assert [e["steps"] for e in data["epochs"]] == [-(-portrait // 6) - (-(len(images) - portrait) // 6)]


@pytest.mark.parametrize("name,tiny", [
    ("ssd", ["model.batch_size=2"]),
    ("maskrcnn", ["model.batch_size=1", "model.synthetic.height=64", "model.synthetic.width=96",
                  "model.min_size=64", "model.max_size=96"]),
])
def test_real_scale_models_run_throughput_mode_on_cpu_at_tiny_shapes(name, tiny, tmp_path):
    out = run_cli("harness.train", f"model={name}", f"dataset={name}_coco2017", "mode=throughput", "seed=1",
                  "warmup_steps=1", "throughput_steps=1", "throughput_repeats=1", "output_root=out", *QUIET, *tiny,
                  cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["mode"] == "throughput" and data["throughput"] > 0
    params = data["hyperparameters"]
    assert params["global_batch_size"] >= 1 and "opt_base_learning_rate" in params
