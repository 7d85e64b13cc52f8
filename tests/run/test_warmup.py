"""warm_up=true: the step compiled before run_start on synthetic batches of every shape, and a run warmed up
trains exactly as one that was not: every loss, every quality, the same."""
from __future__ import annotations

import json
from types import SimpleNamespace

import torch

from harness.run.build import BuiltRun
from harness.run.feed import Feed
from harness.run.precision import policy
from harness.run.warmup import PASSES, put_back_buffers, warm_up
from tests.helpers import run_cli
from tests.models.warmed import Warmed

# one OpenMP thread in both runs compared: a count chosen from the host's load at each start (one core busy
# with the other test worker, or not) sums in another order, 1e-7 apart on a loaded CI host
ENV = {"HARNESS_MODELS": "tests.models.warmed", "OMP_NUM_THREADS": "1"}


def test_the_warm_up_steps_every_shape_and_leaves_buffers_gradients_and_generators_as_they_were():
    cpu = torch.device("cpu")
    ctx = SimpleNamespace(device=cpu, rank=0, world_size=1, shared_seed=5,
                          options=SimpleNamespace(batch_size=16, learning_rate=0.1))
    bench = Warmed(ctx)  # type: ignore[arg-type]
    bench.model.eval()
    run = BuiltRun(bench=bench, precision=policy("fp32", cpu), ctx=ctx, trained=bench.model,  # type: ignore[arg-type]
                   feed=Feed(cpu))
    buffers = [b.clone() for b in bench.model.buffers()]
    drawn = torch.get_rng_state()
    seconds = warm_up(run)
    assert bench.forwards == 2 * PASSES and seconds > 0  # both shapes, each pass
    assert all(torch.equal(a, b) for a, b in zip(buffers, bench.model.buffers()))
    assert bench.model[1].num_batches_tracked.item() == 0  # batch norm never counted a warm-up batch
    assert all(p.grad is None for p in bench.model.parameters())
    assert torch.equal(torch.get_rng_state(), drawn)  # the synthetic batches and dropout drew nothing for good
    assert not bench.model.training  # the mode it was in


def test_a_buffer_the_forward_replaced_is_put_back_whole_and_the_others_in_place():
    m = torch.nn.Module()
    m.register_buffer("table", torch.zeros(4))
    m.register_buffer("count", torch.zeros(()))
    kept = {n: b.clone() for n, b in m.named_buffers()}
    held = m.count  # a compiled graph holds this tensor: it must stay the one the module has
    m.table = torch.ones(8)  # as the Transformer's longer position table replaces its shorter one
    m.count += 3
    put_back_buffers(m, kept)
    assert m.table.shape == (4,) and m.table.sum().item() == 0
    assert m.count is held and m.count.item() == 0


def _train(tmp_path, name: str, *extra: str) -> tuple[dict, str]:
    out = run_cli("harness.train", "model=warmed", "device=cpu", "seed=3", f"output_root={tmp_path / name}",
                  *extra, cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr[-2000:]
    (result,) = (tmp_path / name).rglob("result.json")
    return json.loads(result.read_text()), out.stdout + out.stderr


def test_a_run_warmed_up_trains_exactly_as_one_that_was_not(tmp_path):
    warmed, said = _train(tmp_path, "warmed", "warm_up=true")
    plain, _ = _train(tmp_path, "plain")
    assert "warmed up on 2 synthetic batch shape(s), 3 passes each" in said
    assert warmed["warm_up_s"] > 0 and warmed["warm_up_s"] <= warmed["init_time_s"]
    assert plain["warm_up_s"] is None
    assert len(plain["epochs"]) == 3
    assert [e["train_loss"] for e in warmed["epochs"]] == [e["train_loss"] for e in plain["epochs"]]
    assert [e["quality"] for e in warmed["evals"]] == [e["quality"] for e in plain["evals"]]


def test_warm_up_in_mode_throughput_is_refused_in_one_line(tmp_path):
    out = run_cli("harness.train", "model=warmed", "device=cpu", "mode=throughput", "warm_up=true",
                  f"output_root={tmp_path}", cwd=tmp_path, env=ENV)
    assert out.returncode != 0
    assert "warm_up=true warms mode=train up before its clock starts" in out.stderr
    assert not (tmp_path / "runs").exists()


def test_a_sharded_model_warmed_up_on_two_ranks_trains_as_one_that_was_not(tmp_path):
    """Llama 3.1 8B's debug preset, FSDP2 over two gloo ranks: the warm-up (on by default wherever its step
    compiles, on a GPU) leaves the sharded parameters, their gradients and every rank's generators as they were."""
    runs = []
    for warm in ("true", "false"):
        out = run_cli("harness.train", "model=llama31_8b", "+debug=llama31_8b", "device=cpu", "gpus=2", "seed=1",
                      f"warm_up={warm}", f"output_root={tmp_path / warm}", "progress=false", cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        (result,) = (tmp_path / warm).rglob("result.json")
        runs.append(json.loads(result.read_text()))
    warmed, plain = runs
    assert warmed["warm_up_s"] is not None and plain["warm_up_s"] is None
    assert [e["train_loss"] for e in warmed["epochs"]] == [e["train_loss"] for e in plain["epochs"]]
    assert [e["quality"] for e in warmed["evals"]] == [e["quality"] for e in plain["evals"]]
