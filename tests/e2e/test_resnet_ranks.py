"""ResNet's evaluation on two CPU ranks (gloo) equals one rank's: each scores a contiguous share of the
validation images with rank 0's BatchNorm statistics (the loop's evaluation hands every rank those),
and the counts are summed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from omegaconf import OmegaConf

from harness.config import compose
from harness.interface import EvalSchedule, RunContext
from harness.observe.hooks import Hooks
from harness.run.build import BuiltRun
from harness.run.feed import Feed
from harness.run.loop import Judge, evaluate
from harness.run.mlperf_log import MLPerfLog
from harness.run.precision import policy

pytestmark = pytest.mark.e2e


def _bench(data_root: Path, rank: int, world: int):
    cfg = compose(["model=resnet", "+debug=resnet", "seed=1", f"data_root={data_root}", "model.eval_batch_size=3"])
    OmegaConf.resolve(cfg)
    from reference_models.resnet import SPEC

    assert SPEC.task is not None
    return SPEC.build(RunContext(cfg=cfg, data_dir=SPEC.task.prepare(cfg), device=torch.device("cpu"), rank=rank,
                            world_size=world, seed=1, shared_seed=2))


def _eval_rank(rank: int, world: int, init_file: str, state_path: str, data_root: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    bench = _bench(Path(data_root), rank, world)
    bench.model.load_state_dict(torch.load(state_path))
    if rank == 1:  # its own BatchNorm statistics, as training on its own batches leaves them
        for m in bench.model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.add_(3.0)
    cpu = torch.device("cpu")
    run = BuiltRun(bench, policy("fp32", cpu), RunContext(cfg=None, data_dir=None, device=cpu, rank=rank,  # type: ignore[arg-type]
                                                          world_size=world, seed=1, shared_seed=2), bench.model, Feed(cpu))
    from reference_models.resnet import SPEC

    quality, _ = evaluate(run, 1, Judge(SPEC.task.quality, 0.759, EvalSchedule(), 1), MLPerfLog(None), Hooks([]))
    means = sum(float(m.running_mean.sum()) for m in bench.model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    Path(f"{out}.{rank}").write_text(json.dumps([quality, means]))
    dist.destroy_process_group()


def test_two_ranks_score_the_validation_set_as_one_rank_does(tmp_path):
    single = _bench(tmp_path / "data", 0, 1)
    torch.manual_seed(0)
    for m in single.model.modules():  # statistics and weights that make the predictions differ per image
        if isinstance(m, torch.nn.BatchNorm2d):
            torch.nn.init.normal_(m.running_mean, 0, 0.5)
            torch.nn.init.uniform_(m.running_var, 0.5, 2.0)
    torch.nn.init.normal_(single.model.fc.weight, 0, 1.0)
    torch.save(single.model.state_dict(), tmp_path / "w.pt")
    single.model.eval()
    expected = single.evaluate(single.model, 1)
    means = sum(float(m.running_mean.sum()) for m in single.model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    mp.spawn(_eval_rank, args=(2, str(tmp_path / "init"), str(tmp_path / "w.pt"), str(tmp_path / "data"),
                               str(tmp_path / "q")), nprocs=2)
    results = [json.loads((tmp_path / f"q.{r}").read_text()) for r in (0, 1)]
    assert [q for q, _ in results] == [expected, expected]
    assert [m for _, m in results] == pytest.approx([means, means])  # rank 1 scored with rank 0's statistics
