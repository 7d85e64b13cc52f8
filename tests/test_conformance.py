"""Every registered model, at its debug preset (reference_models/<model>/conf/debug/<model>.yaml), through
the harness's own parts: what its SPEC names lazily exists, it builds through harness.run.build, its first
losses match its golden file for seed 1, it evaluates to a quality of its declared shape, and a CLI run
writes a log its checker accepts (or rejects only for a target a debug run cannot reach). Throughput-only
models run mode=throughput instead. Registering a model adds it
here; its golden file is written by

    UPDATE_GOLDEN=1 python -m pytest tests/test_conformance.py
"""
from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness import registry
from harness.check import check_log
from harness.config import compose
from harness.interface.lazy import Lazy
from harness.observe.meter import ThroughputMeter
from harness.run.build import build_run, context_for
from harness.run.loop import train_epoch
from tests.helpers import run_cli

GOLDEN = Path(__file__).resolve().parent / "golden"
STEPS = 4


def _overrides(name: str, tmp: Path) -> list[str]:
    spec = registry.get(name)
    out = [f"model={name}", f"+debug={name}", "seed=1", "device=cpu", f"output_root={tmp}", "progress=false",
           "tensorboard=false", "telemetry=false"]
    return out + (["mode=throughput", "throughput_steps=3", "throughput_repeats=2"] if spec.throughput_only else [])


@pytest.mark.parametrize("name", [s.name for s in registry.MODELS])
def test_model_has_a_debug_preset_and_documented_options(name):
    package = next(p for p in registry.PACKAGES if p.SPEC.name == name)
    assert (Path(package.__file__).parent / "conf" / "debug" / f"{name}.yaml").is_file(), \
        "add reference_models/<model>/conf/debug/<model>.yaml"
    from harness.interface.option_help import field_docs

    spec = registry.get(name)
    docs = field_docs(spec.options)
    undocumented = [f for f in spec.options.__dataclass_fields__ if not docs.get(f)]
    assert not undocumented, f"document each option with a docstring under it: {undocumented}"


@pytest.mark.parametrize("name", [s.name for s in registry.MODELS])
def test_what_the_spec_names_lazily_exists(name):
    spec = registry.get(name)
    for named in [spec.build] + ([] if spec.task is None else [spec.task.prepare, spec.task.check]):
        while isinstance(named, partial):
            named = named.func
        if isinstance(named, Lazy):
            assert callable(named.target()), named.spec  # imported here, as the first call imports it


@pytest.mark.parametrize("name", [s.name for s in registry.MODELS])
def test_first_losses_match_the_golden_file(name, tmp_path):
    torch.set_num_threads(1)
    cfg = compose(_overrides(name, tmp_path))
    OmegaConf.resolve(cfg)
    spec = registry.get(name)
    data_dir = None if spec.throughput_only else spec.task.prepare(cfg)
    ctx = context_for(cfg, data_dir=data_dir)
    run = build_run(cfg, ctx)
    # the first step of each of STEPS epochs, through the loop's own step
    losses = [train_epoch(run, epoch, ThroughputMeter(0, lambda: None), max_steps=1).train_loss
              for epoch in range(1, STEPS + 1)]
    assert all(torch.isfinite(torch.tensor(losses)))
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN") or not golden.exists():
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps({"seed": 1, "overrides": _overrides(name, Path("OUT"))[:2],
                                      "first_losses": losses}, indent=1) + "\n")
        if not os.environ.get("UPDATE_GOLDEN"):
            pytest.fail(f"{golden} did not exist: written now, commit it")
    want = json.loads(golden.read_text())["first_losses"]
    assert losses == pytest.approx(want, rel=1e-4, abs=1e-6)
    if not spec.throughput_only:
        run.module.eval()
        with torch.no_grad():
            spec.task.quality.value(run.bench.evaluate(run.module, STEPS))  # the declared shape, plain numbers


@pytest.mark.parametrize("name", [s.name for s in registry.MODELS])
def test_a_debug_run_writes_what_its_checker_accepts(name, tmp_path):
    spec = registry.get(name)
    out = run_cli("harness.train", *_overrides(name, tmp_path / "out"), cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (result_path,) = (tmp_path / "out").rglob("result.json")
    result = json.loads(result_path.read_text())
    # counted on the synthetic batch against the model as built for this dataset (its own vocabulary)
    assert result["model_flops_per_sample"], result.get("mfu_note")
    if spec.throughput_only:
        assert result["mode"] == "throughput" and result["throughput"] > 0
        return
    assert result["status"] in ("success", "aborted") and result["epochs_run"] >= 1
    verdict = check_log(result_path.parent / "mlperf.log")
    if result["status"] == "success":
        assert verdict.passed, verdict.messages
        # the log counts its epochs in the unit MLPerf's RCP checker reads for the benchmark (DLRM-DCNv2 logged
        # sample counts where its RCPs are epochs: 164,864 "epochs" passed the RCP test whatever they were)
        from harness.results.read.official import convergence_unit

        assert result["epoch_unit"] == convergence_unit(spec.benchmark, spec.task.ruleset), result["epoch_unit"]
    else:  # a debug run is too short to reach the target: that must be the checker's only objection
        assert verdict.messages and all(m.strip().startswith("Failed checks for eval_accuracy") for m in verdict.messages), \
            verdict.messages
