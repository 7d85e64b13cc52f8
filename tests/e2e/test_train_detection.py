"""SSD and Mask R-CNN end to end on CPU: every key their 0.7.0 rules require, mAP as a fraction (two parts
for Mask R-CNN), the checker's verdict, evaluation over two ranks equal to one rank's, two-rank runs, and
the real-scale models' throughput mode at tiny shapes (the plain torchvision baselines:
tests/e2e/test_plain_baselines.py).
(Convergence of the embedded defaults is measured, not tested: docs/ssd.md, docs/maskrcnn.md.)"""
from __future__ import annotations

import json
from pathlib import Path
from queue import Empty
from typing import Any, Callable, Iterator

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
# Samples read in the ranks' own processes: a spawned rank spawns its loader workers too, each importing
# torch and torchvision anew (5-10 s on 2 cores, for every loader of every rank), for the same batches
# (harness/interface/loader.py). SSD's two-rank run keeps its workers: that path stays tested.
NO_WORKERS = "model.workers=0"
# small evaluation batches, so that both ranks get some; every Mask R-CNN detection kept, so that a
# model trained for a few steps finds something and the equality means something
EVAL = {"ssd": ["model.eval_batch_size=2", NO_WORKERS],
        "maskrcnn": ["model.eval_batch_size=2", "model.box_score_threshold=0.0", NO_WORKERS]}


@pytest.fixture(scope="module")
def coco_root(tmp_path_factory) -> Path:
    """One data_root for the runs below: SSD's and Mask R-CNN's debug presets read the same generated
    dataset (coco_shapes_debug), written by the first run that needs it."""
    return tmp_path_factory.mktemp("coco")


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


def _quality(rank: int, world: int, name: str, state: str, data_root: str, extra: list[str]) -> Any:
    """The mAP of the weights in `state`, evaluated by this rank of a world of `world` ranks."""
    torch.set_num_threads(1)
    cfg = compose([f"model={name}", f"+debug={name}", f"data_root={data_root}", "seed=1", *EVAL[name], *extra])
    OmegaConf.resolve(cfg)
    bench = registry.get(name).build(RunContext(cfg=cfg, data_dir=Path(cfg.dataset.path),
                                                device=torch.device("cpu"), rank=rank, world_size=world, seed=1,
                                                shared_seed=2))
    bench.model.load_state_dict(torch.load(state))
    bench.model.eval()
    with torch.no_grad():
        return bench.evaluate(bench.model, 1)


def _serve(rank: int, world: int, init_file: str, jobs: list, results: list) -> None:
    """One rank of a gloo world: it evaluates each job it is handed (both ranks get the same jobs, in
    the same order) and hands back its mAP, until it is handed None."""
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    for job in iter(jobs[rank].get, None):
        results[rank].put(json.dumps(_quality(rank, world, *job)))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_rank_world(tmp_path_factory) -> Iterator[Callable[..., list]]:
    """evaluate(name, state, data_root, extra): [rank 0's mAP, rank 1's] from a world of two ranks
    started once for the module's cases (a spawned rank imports torch and torchvision anew: seconds of
    CPU that each case would pay again)."""
    spawn = mp.get_context("spawn")
    jobs, results = [spawn.Queue() for _ in range(2)], [spawn.Queue() for _ in range(2)]
    init = tmp_path_factory.mktemp("world") / "init"
    ranks = mp.spawn(_serve, args=(2, str(init), jobs, results), nprocs=2, join=False)

    def evaluate(*job: Any) -> list:
        for queue in jobs:
            queue.put(job)
        out = []
        for queue in results:
            while True:
                try:
                    out.append(json.loads(queue.get(timeout=1)))
                    break
                except Empty:
                    ranks.join(timeout=0)  # a rank that failed: its traceback, and the other stopped
        return out

    yield evaluate
    for queue in jobs:
        queue.put(None)
    try:
        ranks.join(timeout=60)
    except (mp.ProcessRaisedException, mp.ProcessExitedException):
        pass  # a rank failed: the case it failed in reported it, and the other rank was stopped
    for process in ranks.processes:  # one left waiting in a collective
        if process.is_alive():
            process.kill()


@pytest.mark.parametrize("name,extra", [("ssd", []), ("maskrcnn", []), ("maskrcnn", ["model.aspect_grouping=true"])])
def test_evaluation_over_two_ranks_equals_one_ranks(name, extra, tmp_path, coco_root, two_rank_world):
    """A trained-for-a-few-steps model, so that it detects something: the same mAP from 1 and 2 ranks
    (Mask R-CNN's also with batches grouped by aspect ratio, in training and evaluation)."""
    cfg = compose([f"model={name}", f"+debug={name}", f"data_root={coco_root}", "seed=1", *EVAL[name], *extra])
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
    job = (name, str(tmp_path / "w.pt"), str(coco_root), extra)
    one = json.loads(json.dumps(_quality(0, 1, *job)))  # as the ranks hand theirs back
    two = two_rank_world(*job)
    assert two[0] == two[1] == pytest.approx(one, abs=1e-9)
    values = one.values() if isinstance(one, dict) else [one]
    if name == "ssd":
        assert any(v > 0 for v in values)  # something was found, so the equality means something
    else:  # a few steps find nothing right yet, but many detections went through the gather and COCOeval
        bench.model.eval()
        with torch.no_grad():
            image, _ = bench.val[0]
            assert len(bench.model([image])[0]["boxes"]) > 10


def test_two_cpu_ranks_train_in_one_run_directory(tmp_path, coco_root):
    out = run_cli("harness.train", "model=ssd", "+debug=ssd", "gpus=2", "seed=1", "output_root=out",
                  f"data_root={coco_root}", *QUIET, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["world_size"] == 2 and data["global_batch_size"] == 16
    assert run_cli("harness.check", str(result.parent)).returncode == 1  # only the target, checked above


def test_two_cpu_ranks_train_mask_rcnn_on_aspect_grouped_batches(tmp_path, coco_root):
    """Both ranks take every step of the grouped epoch (DDP would hang or fail on a rank with a step
    more), and the epoch is as long as the groups make it, its short last batches kept."""
    out = run_cli("harness.train", "model=maskrcnn", "+debug=maskrcnn", "gpus=2", "seed=2", "output_root=out",
                  f"data_root={coco_root}", "model.aspect_grouping=true", "model.batch_size=3", NO_WORKERS, *QUIET,
                  cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result,) = (tmp_path / "out").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["world_size"] == 2 and data["global_batch_size"] == 6 and data["status"] == "aborted"
    (annotations,) = coco_root.rglob("instances_train2017.json")
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
