"""cuda_graph=true: mode=throughput's forward and backward captured once and replayed (harness/run/graph.py).
The option's rules are checked on any machine; the capture itself needs a GPU."""
from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from harness import fastpath, registry
from harness.config import compose
from harness.errors import ConfigError
from harness.run.build import build_run, context_for
from harness.observe.hooks import StepDone
from harness.observe.meter import ThroughputMeter
from harness.run.graph import EAGER_STEPS, CaptureFailed, CapturedStep, _copy_into
from harness.run.loop import train_epoch
from harness.run.step import train_step
from tests.helpers import run_cli, said

NCF = ["model=ncf", "mode=throughput", "seed=1", "model.synthetic.n_users=500", "model.synthetic.n_items=300",
       "model.batch_size=256"]
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")


@pytest.mark.parametrize("extra,said_", [
    (["mode=throughput", "device=cpu"], "use device=cuda"),
    (["mode=throughput", "gpus=2"], "use gpus=1"),
])
def test_cuda_graph_is_refused_where_it_cannot_replay_one_batch_on_one_gpu(extra, said_):
    with pytest.raises(ConfigError, match=said_):
        compose(["model=ncf", "cuda_graph=true", *extra])


@pytest.mark.skipif(torch.cuda.is_available(), reason="the host has a GPU")
def test_cuda_graph_on_a_host_without_a_gpu_is_one_line_before_the_run(tmp_path):
    out = run_cli("harness.train", *NCF, "cuda_graph=true", "output_root=out", cwd=tmp_path)
    assert out.returncode == 2 and said(out.stderr) == [
        "harness.train: error: cuda_graph=true captures CUDA work and this host has no GPU: run it on one, or "
        "leave cuda_graph out"]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal a host without a GPU gets")
def test_compiling_on_a_host_without_a_gpu_is_one_line_before_the_run(tmp_path):
    """Every model compiles on CUDA alone: asked for on a CPU, the run would run eager under a compiled label."""
    out = run_cli("harness.train", "model=retinanet", "seed=1", "model.compile=true", "output_root=out", cwd=tmp_path)
    assert out.returncode == 2 and said(out.stderr) == [
        "harness.train: error: model.compile=true compiles for a CUDA device and this host has none: leave it out "
        "(on a CPU the step runs eager)"]
    assert not (tmp_path / "out").exists()


def test_a_graphed_run_is_grouped_apart_from_the_eager_one():
    cfg = compose([*NCF, "device=auto", "cuda_graph=true", "precision=bf16"])
    assert fastpath.label(cfg) == "bf16+graph"
    assert fastpath.label(compose([*NCF, "precision=bf16", "master_weights=true", "cuda_graph=true"])) \
        == "bf16+master+graph"
    assert fastpath.label(compose([*NCF, "precision=fp32"])) == "fp32"


def test_capturing_a_run_on_the_cpu_is_a_config_error():
    cfg = compose([*NCF, "device=cpu"])
    run = build_run(cfg, context_for(cfg))
    with pytest.raises(ConfigError, match="needs a CUDA device and this run is on cpu"):
        CapturedStep.capture(run, run.synthetic_batch())


def _losses(extra: list[str], graphed: bool, steps: int = 4) -> list[float]:
    cfg = compose([*NCF, "device=cuda", *extra])
    run = build_run(cfg, context_for(cfg))
    batch = run.synthetic_batch()
    if graphed:
        step = CapturedStep.capture(run, batch)
        assert step.warmup_steps == EAGER_STEPS + 1  # the eager steps and the first replay
    else:  # as many eager steps as the capture trains
        step = train_step
        for _ in range(EAGER_STEPS + 1):
            train_step(run, batch)
    return [float(step(run, batch)[0]) for _ in range(steps)]


@needs_gpu
@pytest.mark.parametrize("precision,rtol", [("fp32", 1e-5), ("amp", 1e-3)])
def test_replayed_steps_train_as_the_eager_steps_do(precision, rtol):
    """The replays' losses follow the eager steps' step by step: the gradients the graph writes reach
    the optimizer (and the scaler under amp), and the weights it updates feed the next replay."""
    eager, graphed = _losses([f"precision={precision}"], False), _losses([f"precision={precision}"], True)
    assert graphed == pytest.approx(eager, rel=rtol)
    assert len(set(graphed)) > 1  # the weights moved between replays


@needs_gpu
def test_a_step_that_syncs_with_the_host_cannot_be_captured_and_says_why():
    cfg = compose([*NCF, "device=cuda"])
    run = build_run(cfg, context_for(cfg))
    plain = run.bench.loss

    def syncing(model, batch):
        loss, n = plain(model, batch)
        if loss.item() < 0:  # a host read inside the step
            raise AssertionError
        return loss, n

    run.bench.loss = syncing  # type: ignore[method-assign]
    with pytest.raises(CaptureFailed, match=r"model=ncf's step cannot be captured in a CUDA graph \(.+\)"):
        CapturedStep.capture(run, run.synthetic_batch())


@needs_gpu
def test_tacotron2_trains_from_a_graph_at_its_debug_preset(tmp_path):
    out = run_cli("harness.train", "model=tacotron2", "+debug=tacotron2", "mode=throughput", "precision=amp",
                  "cuda_graph=true", "throughput_steps=3", "throughput_repeats=2", "output_root=out",
                  "progress=false", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (path,) = (tmp_path / "out").rglob("result.json")
    result = json.loads(path.read_text())
    assert result["status"] == "success" and result["precision"] == "amp+graph"
    assert all(e["train_loss"] > 0 and e["throughput"] > 0 for e in result["epochs"])


@needs_gpu
def test_resnet_s_step_is_captured_whole():
    """Its loss normalises the pixels with constants made once per device: a tensor made from a list on the
    GPU each step is a copy from pageable memory, which the capture refuses (and which syncs every step)."""
    cfg = compose(["model=resnet", "+debug=resnet", "mode=throughput", "device=cuda", "precision=amp", "seed=1"])
    run = build_run(cfg, context_for(cfg))
    step = CapturedStep.capture(run, run.synthetic_batch())
    assert float(step(run, run.synthetic_batch())[0]) > 0


class _StepLosses(ThroughputMeter):
    """Each step's loss as the loop hands it to its hooks."""

    def __init__(self) -> None:
        super().__init__(0, lambda: None)
        self.losses: list[float] = []

    def after_step(self, done: StepDone) -> None:
        super().after_step(done)
        self.losses.append(float(done.loss))  # sync point: a test's reading


def _step_losses(tmp_path, graphed: bool, epochs: int = 2) -> tuple[list[float], Any]:
    """ResNet's debug preset in mode=train, fp32 (no loss scale to skip steps) and decoded by the workers
    (decode=auto's timed choice could differ between the two runs): each step's loss over `epochs`."""
    cfg = compose(["model=resnet", "+debug=resnet", "seed=1", "device=cuda", "precision=fp32", "model.decode=cpu",
                   f"data_root={tmp_path}", f"output_root={tmp_path / 'out'}", "progress=false", "tensorboard=false",
                   "telemetry=false", f"cuda_graph={str(graphed).lower()}"])
    spec = registry.get("resnet")
    run = build_run(cfg, context_for(cfg, data_dir=spec.task.prepare(cfg)))
    hook = _StepLosses()
    for epoch in range(1, epochs + 1):
        train_epoch(run, epoch, hook)
    return hook.losses, run.train_graph


@needs_gpu
def test_mode_train_replays_its_batches_and_trains_as_the_eager_loop_does(tmp_path):
    """mode=train with cuda_graph=true: the first batches trained eagerly, then each copied into the graph's
    inputs and replayed; each step's loss follows the eager loop's, the same batches in the same order."""
    eager, _ = _step_losses(tmp_path, graphed=False)
    graphed, graph = _step_losses(tmp_path, graphed=True)
    assert graph.captured is not None and graph.fallback is None and graph.replays == len(graphed) - EAGER_STEPS
    assert graphed[:EAGER_STEPS] == pytest.approx(eager[:EAGER_STEPS], rel=1e-5)
    assert graphed == pytest.approx(eager, rel=1e-3)
    assert len(set(graphed)) == len(graphed)  # each replay trained a batch of its own


def test_a_batch_of_other_shapes_is_not_copied_into_the_graphs_inputs():
    """An epoch's short last batch (or any batch whose shapes differ) trains eagerly: nothing of it is
    copied into the captured batch; a batch of the same shapes is copied whole."""
    held = [torch.zeros(4, 3), torch.zeros(4, dtype=torch.long)]
    assert not _copy_into(held, [torch.ones(2, 3), torch.ones(2, dtype=torch.long)])
    assert not _copy_into(held, [torch.ones(4, 3), torch.ones(4)])  # a dtype differs
    assert held[0].sum() == 0 and held[1].sum() == 0
    assert _copy_into(held, [torch.ones(4, 3), torch.ones(4, dtype=torch.long)])
    assert held[0].sum() == 12 and held[1].sum() == 4


def test_mode_train_accepts_a_graph_on_one_gpu():
    """mode=train copies its batches into a graph's inputs: allowed where mode=throughput's graph is."""
    assert compose(["model=resnet", "cuda_graph=true"]).cuda_graph is True
    with pytest.raises(ConfigError, match="use gpus=1"):
        compose(["model=resnet", "cuda_graph=true", "gpus=2"])


class _FakeCapture:
    """CapturedStep's part GraphedTraining uses: what each replay's inputs held."""

    def __init__(self, batch: Any):
        self.batch, self.loss, self.terms, self.samples = batch, torch.zeros(()), None, 4
        self.replayed: list[list[float]] = [batch[0].tolist()]  # the capture's own replay

    def __call__(self, run: Any, batch: Any) -> tuple[torch.Tensor, None, int]:
        assert batch is self.batch
        self.replayed.append(batch[0].tolist())
        return self.loss.clone(), None, self.samples


def test_each_batch_trains_once_in_order_and_a_short_one_eagerly(monkeypatch):
    """The first EAGER_STEPS batches train eagerly, the next is captured from a copy of itself (its own step
    is the capture's replay), each later batch of the same shape is copied into that copy and replayed, and
    a short batch trains eagerly: every batch once, in the loader's order."""
    from harness.run import graph

    eager: list[list[float]] = []
    captures: list[_FakeCapture] = []

    def train_step(run: Any, batch: Any) -> tuple[torch.Tensor, None, int]:
        eager.append(batch[0].tolist())
        return torch.zeros(()), None, len(batch[0])

    def capture(cls: Any, run: Any, batch: Any, eager_steps: int) -> _FakeCapture:
        assert eager_steps == 0  # no eager step on the captured batch: it would train twice
        captures.append(_FakeCapture(batch))
        return captures[-1]

    monkeypatch.setattr(graph, "train_step", train_step)
    monkeypatch.setattr(graph.CapturedStep, "capture", classmethod(capture))
    run = type("Run", (), {"ctx": type("Ctx", (), {"cfg": compose(["model=resnet"])})()})()
    batches = [[torch.full((4,), float(k)), torch.zeros(4, dtype=torch.long)] for k in range(7)]
    short = [torch.full((2,), 9.0), torch.zeros(2, dtype=torch.long)]
    step = graph.GraphedTraining()
    for batch in [*batches, short]:
        step(run, batch)
    assert eager == [[0.0] * 4, [1.0] * 4, [2.0] * 4, [9.0] * 2]
    (captured,) = captures
    assert captured.replayed == [[float(k)] * 4 for k in range(3, 7)] and step.replays == 4
    assert captured.batch[0] is not batches[3][0]  # the graph's inputs are its own buffers


def test_a_graphed_mode_train_gets_a_hardware_queue_per_stream_unless_the_environment_says(monkeypatch):
    from harness.run.build import HARDWARE_QUEUES, hardware_queues

    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    assert hardware_queues(compose(["model=resnet", "cuda_graph=false"])) is None
    assert hardware_queues(compose(["model=resnet", "mode=throughput", "cuda_graph=true"])) is None
    assert hardware_queues(compose(["model=transformer"])) is None  # its batches change shape: no graph
    assert hardware_queues(compose(["model=resnet", "cuda_graph=true"])) == HARDWARE_QUEUES == "32"
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS")
    assert hardware_queues(compose(["model=resnet"])) == "32"  # unresolved (a script's): the fast path's choice
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")
    assert hardware_queues(compose(["model=resnet", "cuda_graph=true"])) == "4"
