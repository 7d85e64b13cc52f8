"""cuda_graph=true: mode=throughput's forward and backward captured once and replayed (harness/run/graph.py).
The option's rules are checked on any machine; the capture itself needs a GPU."""
from __future__ import annotations

import json

import pytest
import torch

from harness import fastpath
from harness.config import compose
from harness.errors import ConfigError
from harness.run.build import build_run, context_for
from harness.run.graph import EAGER_STEPS, CaptureFailed, CapturedStep
from harness.run.step import train_step
from tests.helpers import run_cli, said

NCF = ["model=ncf", "mode=throughput", "seed=1", "model.synthetic.n_users=500", "model.synthetic.n_items=300",
       "model.batch_size=256"]
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")


@pytest.mark.parametrize("extra,said_", [
    (["mode=train"], "add mode=throughput"),
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
