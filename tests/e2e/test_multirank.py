"""Several ranks on CPU (gloo): one run directory, rank 0's files, identical evaluations for the same
seed, distributed evaluation equal to a single rank's, and a failed or interrupted rank reported."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from omegaconf import OmegaConf

from harness.config import compose
from harness.interface import RunContext
from tests.helpers import run_cli, wait_for_text

pytestmark = pytest.mark.e2e
NCF2 = ["model=ncf", "device=cpu", "gpus=2", "progress=false"]


def _result(root: Path) -> tuple[Path, dict]:
    (path,) = root.rglob("result.json")
    return path.parent, json.loads(path.read_text())


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    work = tmp_path_factory.mktemp("two")
    out = run_cli("harness.train", *NCF2, "seed=1", "output_root=out", cwd=work)
    return work, out


def test_two_cpu_ranks_reach_the_target_in_one_run_directory(two_ranks):
    work, out = two_ranks
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(work / "out")
    assert result["status"] == "success" and result["world_size"] == 2
    assert result["threads"]["torch_threads"] == result["threads"]["omp_num_threads"]  # chosen for 2 ranks
    assert result["threads"]["chosen_by"] == "user" or "2 local rank(s)" in result["threads"]["reason"]
    assert result["global_batch_size"] == 2 * 2048
    assert result["hyperparameters"]["opt_base_learning_rate"] == pytest.approx(0.003 * 2 ** 0.5)  # sqrt rule
    names = {p.name for p in run_dir.iterdir()}
    assert names == {".hydra", "config.yaml", "mlperf.log", "result.json", "train.log", "rank_1.log",
                     "system.json", "tb", "telemetry.jsonl"}
    # both ranks' processes are in the telemetry summary: CPU time adds up, the peak is the larger one
    assert result["telemetry"]["source"] == "process" and result["telemetry"]["processes"] == 2
    assert result["telemetry"]["cpu_seconds"] > 0 and result["platform"] == "2xCPU"
    assert "rank 1/2" in (run_dir / "rank_1.log").read_text()
    # the console shows rank 0 only: every epoch line once
    epochs = [l for l in out.stdout.splitlines() if l.startswith("epoch ")]
    assert len(epochs) == result["epochs_run"] and "world: 2 rank(s)" in out.stdout
    log = (run_dir / "mlperf.log").read_text()
    assert '"key": "global_batch_size", "value": 4096' in log and '"accelerators_per_node", "value": 2' in log
    assert run_cli("harness.check", str(run_dir)).returncode == 0


def test_same_seed_and_world_give_the_same_evaluations(tmp_path):
    # The debug preset's data and model: what must repeat is the world's seeding, sharding and gradient
    # reduction, whatever their size. Two evaluations a run: HR@10 over its 400 users moves in steps of
    # 1/400, and one evaluation alone could match between the two seeds by chance.
    evals = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        out = run_cli("harness.train", *NCF2, "+debug=ncf", f"seed={seed}", "max_epochs=2", "model.target=0.99",
                      f"output_root={name}", f"data_root={tmp_path / 'data'}", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        evals[name] = [e["quality"] for e in _result(tmp_path / name)[1]["evals"]]
    assert len(evals["a"]) == 2 and evals["a"] == evals["b"]
    assert evals["a"] != evals["c"]


def _eval_rank(rank: int, world: int, init_file: str, state_path: str, data_dir: str, out: str):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    cfg = compose(["model=ncf", f"data_root={Path(data_dir).parent}"])
    OmegaConf.resolve(cfg)
    from reference_models.ncf import SPEC

    build = SPEC.build

    bench = build(RunContext(cfg=cfg, data_dir=Path(data_dir), device=torch.device("cpu"),
                             rank=rank, world_size=world, seed=1, shared_seed=2))
    bench.model.load_state_dict(torch.load(state_path))
    bench.model.eval()
    quality = bench.evaluate(bench.model, 1)
    if rank == 0:
        Path(out).write_text(repr(quality))
    dist.destroy_process_group()


def test_distributed_evaluation_equals_a_single_ranks(two_ranks, tmp_path):
    work, _ = two_ranks
    data_dir = work / "out" / "datasets" / "ncf_embedded"
    cfg = compose(["model=ncf", f"data_root={data_dir.parent}"])
    OmegaConf.resolve(cfg)
    from reference_models.ncf import SPEC

    build = SPEC.build

    torch.manual_seed(0)
    single = build(RunContext(cfg=cfg, data_dir=data_dir, device=torch.device("cpu"),
                              rank=0, world_size=1, seed=1, shared_seed=2))
    for p in single.model.parameters():  # weights that rank the items in some definite order
        torch.nn.init.normal_(p, 0, 0.5)
    torch.save(single.model.state_dict(), tmp_path / "w.pt")
    single.model.eval()
    expected = single.evaluate(single.model, 1)
    mp.spawn(_eval_rank, args=(2, str(tmp_path / "init"), str(tmp_path / "w.pt"), str(data_dir),
                               str(tmp_path / "q")), nprocs=2)
    assert float((tmp_path / "q").read_text()) == expected


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "harness.train", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_killed_rank_fails_the_run_within_60_s_naming_the_rank(tmp_path):
    proc = _start(tmp_path, *NCF2, "seed=1", "model.target=0.99", "output_root=out")
    wait_for_text(tmp_path / "out", "mlperf.log", '"key": "run_start"', timeout=120)
    rank1_log = wait_for_text(tmp_path / "out", "rank_1.log", "pid ", timeout=120)
    pid = int(re.search(r"pid (\d+)", rank1_log.read_text()).group(1))
    time.sleep(1.0)
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=90)
    assert time.time() - killed_at < 60
    assert proc.returncode == 1
    run_dir, result = _result(tmp_path / "out")
    assert result["status"] == "failed" and result["error"]["rank"] == 1
    assert "SIGKILL" in result["reason"] and "rank 1" in err
    last = json.loads((run_dir / "mlperf.log").read_text().splitlines()[-1][len(":::MLLOG "):])
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"
    assert last["metadata"]["reason"].startswith("rank 1 failed: its process ")  # the killed rank, as in result.json


def test_ctrl_c_stops_every_rank_and_marks_the_run_aborted(tmp_path):
    proc = _start(tmp_path, *NCF2, "seed=1", "model.target=0.99", "output_root=out")
    log = wait_for_text(tmp_path / "out", "mlperf.log", '"key": "run_start"', timeout=120)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    _, result = _result(tmp_path / "out")
    assert result["status"] == "aborted" and "interrupted" in result["reason"]
    last = json.loads(log.read_text().splitlines()[-1][9:])
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"


def test_a_run_started_by_torchrun_is_joined_not_respawned(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "harness.train", "model=ncf", "device=cpu", "seed=3", "progress=false", "output_root=out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, result = _result(tmp_path / "out")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}_ncf", run_dir.name)  # time-stamped like any run
    assert result["status"] == "success" and result["world_size"] == 2 and result["seed"] == 3
    assert {p.name for p in run_dir.iterdir()} == {".hydra", "config.yaml", "mlperf.log", "result.json",
                                                  "train.log", "rank_1.log", "system.json", "tb", "telemetry.jsonl"}
    assert result["telemetry"]["processes"] == 2  # the joined ranks' summaries were gathered too
    assert len(list((tmp_path / "out").rglob("mlperf.log"))) == 1
